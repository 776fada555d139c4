"""The command line around app: the click commands (main.py), option groups parsed into typed options (groups.py),
plugin flags and the policy they describe (plugin_flags.py), checks every flag gets before anything is read
(checks.py), --help laid out by heading with examples (help.py), shell completion (completers.py: the values;
completion.py: the entry points and scripts) and the console scripts (launch.py). Importing this package loads
nothing: the console scripts pause the cycle collector before the commands are imported."""
