"""Errors that end a command with one line on stderr instead of a traceback, and the exit codes every command uses, in
one table (docs/guide/evicting-safely.md, "Exit codes", lists the same): a pipeline can tell a plan that went stale
from an error, and either from a "no" at the prompt."""

from kubectl_desched.sanitize import escaped

DONE = 0  # every confirmed eviction succeeded, nothing to do, or a preview
ERROR = 1  # an error, or a confirmed eviction that did not succeed
USAGE = 2  # bad flags, files, kubeconfig, policy or plan document
NOT_CONFIRMED = 3  # candidates found, nothing evicted: not confirmed
STALE = 4  # apply: some candidates were stale or refused by the checks and left out (--strict: all were)
INTERRUPTED = 130  # Ctrl-C; any signal N gives 128+N (SIGTERM 143, SIGHUP 129)

TABLE = (
    (DONE, "done: every confirmed eviction succeeded, nothing to do, or a preview"),
    (ERROR, "an error, or a confirmed eviction that did not succeed"),
    (USAGE, "usage: bad flags, files, kubeconfig, policy or plan document"),
    (NOT_CONFIRMED, "candidates found but not confirmed: nothing was evicted"),
    (STALE, "apply: candidates stale or refused by the checks were left out (--strict: the whole plan was "
            "refused), or the plan is older than --max-age"),
    (INTERRUPTED, "interrupted: 128+N for signal N (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP)"),
)


class DeschedError(Exception):
    """A failure the user can act on; printed as one line, exit code 1."""

    exit_code = ERROR


class UsageError(DeschedError):
    """Bad flags, arguments or input files; exit code 2 like click's usage errors."""

    exit_code = USAGE


class StaleError(DeschedError):
    """The plan no longer matches the cluster (too old, or --strict with stale candidates): plan again."""

    exit_code = STALE


class ConfigError(UsageError):
    """An invalid policy or plugin argument, located by file and field path."""

    def __init__(self, path: str, message: str, source: str | None = None) -> None:
        # a key or a plugin name from the file is echoed in both: a newline in one must not forge a second line
        path, message, source = escaped(path), escaped(message), source and escaped(source)
        self.path = path
        self.message = message
        self.source = source
        where = f"{source}: " if source else ""
        at = f"{path}: " if path else ""
        super().__init__(f"{where}{at}{message}")
