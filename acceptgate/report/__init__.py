"""``acceptgate report``: one self-contained HTML page (and a markdown summary) from the warehouse's
published snapshot. ``data`` reads the tables, ``markdown`` and ``html`` render them."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from acceptgate import warehouse
from acceptgate.errors import InvalidInput
from acceptgate.report.data import ReportData, Section, collect  # noqa: F401

DEFAULT_OUT = Path("data") / "report.html"


def check_output(out: str | os.PathLike) -> Path:
    """The output's directory exists (or is created) and takes a file; else InvalidInput naming it."""
    out = Path(out)
    try:
        if out.is_dir():
            raise InvalidInput("is a directory", source=str(out), field="--out")
        out.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out.parent, prefix=f".{out.name}.", suffix=".check"):
            pass
    except OSError as exc:
        raise InvalidInput(f"cannot write here: {exc.strerror or exc}", source=str(out), field="--out") from None
    return out


def build(warehouse_path: str | os.PathLike | None = None, out: str | os.PathLike = DEFAULT_OUT) -> tuple[Path, ReportData]:
    """Write the HTML report of the warehouse's published snapshot to ``out`` (atomically)."""
    from acceptgate.report import html

    out = check_output(out)
    data = collect(warehouse.snapshot_path(warehouse.resolve_path(warehouse_path)))
    return html.write(html.page(data), out), data
