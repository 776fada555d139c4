"""The command line around app: option groups parsed into typed options (groups.py), plugin flags and the policy
they describe (plugin_flags.py), checks every flag gets before anything is read (checks.py), and --help laid out
by heading with examples (help.py). cli/main.py wires these into commands."""
