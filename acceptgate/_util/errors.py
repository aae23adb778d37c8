"""The library's own exceptions. The CLI turns InvalidInput into exit code 2."""


class InvalidInput(ValueError):
    """Input a user gave is invalid: the message names the file, record and field."""

    def __init__(self, message: str, *, source: str | None = None, record: str | None = None,
                 field: str | None = None) -> None:
        self.source = source
        self.record = record
        self.field = field
        self.message = message
        where = [p for p in (source, record, f"field {field!r}" if field else None) if p]
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


class Interrupted(BaseException):
    """The process was asked to stop (SIGINT/SIGTERM): raised by the signal handlers, passed through
    the run ledger, which marks the attempt 'interrupted' and publishes nothing. ``signum`` is the
    signal's number; the CLI exits 128 + signum (130 for SIGINT, 143 for SIGTERM). A BaseException,
    like KeyboardInterrupt, so that no ``except Exception`` on the way records it as a task's error."""

    def __init__(self, signum: int, message: str | None = None) -> None:
        self.signum = signum
        try:
            import signal
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        super().__init__(message or f"interrupted by {name}")
