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
