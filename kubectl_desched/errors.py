"""Errors that end a command with one line on stderr instead of a traceback."""

from kubectl_desched import exitcodes


class DeschedError(Exception):
    """A failure the user can act on; printed as one line, exit code 1."""

    exit_code = exitcodes.ERROR


class UsageError(DeschedError):
    """Bad flags, arguments or input files; exit code 2 like click's usage errors."""

    exit_code = exitcodes.USAGE


class StaleError(DeschedError):
    """The plan no longer matches the cluster (too old, or --strict with stale candidates): plan again."""

    exit_code = exitcodes.STALE


class ConfigError(UsageError):
    """An invalid policy or plugin argument, located by file and field path."""

    def __init__(self, path: str, message: str, source: str | None = None) -> None:
        self.path = path
        self.message = message
        self.source = source
        where = f"{source}: " if source else ""
        at = f"{path}: " if path else ""
        super().__init__(f"{where}{at}{message}")
