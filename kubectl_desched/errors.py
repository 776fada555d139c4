"""Errors that end a command with one line on stderr instead of a traceback."""


class DeschedError(Exception):
    """A failure the user can act on; printed as one line, exit code 1."""

    exit_code = 1


class UsageError(DeschedError):
    """Bad flags, arguments or input files; exit code 2 like click's usage errors."""

    exit_code = 2


class ConfigError(UsageError):
    """An invalid policy or plugin argument, located by file and field path."""

    def __init__(self, path: str, message: str, source: str | None = None) -> None:
        self.path = path
        self.message = message
        self.source = source
        where = f"{source}: " if source else ""
        at = f"{path}: " if path else ""
        super().__init__(f"{where}{at}{message}")
