"""Checks the commands run before any work: output paths writable, the warehouse not locked, the
sandbox backend able to run here. Each raises what ``acceptgate.cli.main`` maps to an exit code, so a
run that cannot finish stops in its first seconds and leaves nothing on disk.

(A helper module, not a command: it is not listed in ``COMMAND_MODULES``.)
"""

from __future__ import annotations

from pathlib import Path

from acceptgate import outputs
from acceptgate.errors import InvalidInput
from acceptgate.sandbox import backend as backends


def backend_ready(name: str) -> None:
    """Open and close the backend once: an unknown name is exit 2, an unavailable one exit 3."""
    try:
        sandbox = backends.create(name)
    except ValueError as exc:
        raise InvalidInput(str(exc), field="--backend") from None
    sandbox.close()


def warehouse_ready(arg: str | None) -> Path:
    """The warehouse file a run will write: a DuckDB file or a new one in a writable directory (exit 2),
    not held by another process (waits up to the lock timeout, then exit 4). Creates no file."""
    from acceptgate import warehouse

    path = warehouse.resolve_path(arg)
    outputs.check_file(path, "--warehouse")
    outputs.check_file(warehouse.snapshot_path(path), "--warehouse")
    if path.exists():
        warehouse.check_path(path)  # a DuckDB file, readable and writable
        with warehouse.connect(path):  # raises WarehouseLocked after the lock timeout
            pass
    return path


def run_ids(path: Path, table: str) -> list[str]:
    """The run ids of ``table`` in the warehouse (none when it or the table does not exist yet)."""
    from acceptgate import warehouse

    if not Path(path).exists():
        return []
    with warehouse.connect(path, read_only=True) as con:
        tables = {r[0] for r in con.execute("select table_name from information_schema.tables").fetchall()}
        if table not in tables:
            return []
        return [r[0] for r in con.execute(f"select run_id from {table}").fetchall()]
