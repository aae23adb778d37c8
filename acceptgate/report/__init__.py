"""``acceptgate report``: one self-contained HTML page (and a markdown summary) from the warehouse's
published snapshot. ``data`` reads the tables, ``markdown`` and ``html`` render them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from acceptgate._util import outputs
from acceptgate.store import warehouse

if TYPE_CHECKING:
    from acceptgate.report.data import ReportData

DEFAULT_OUT = Path("data") / "report.html"


def check_output(out: str | os.PathLike) -> Path:
    """The output can be written (test-written, nothing created); else InvalidInput naming it."""
    return outputs.check_file(out, "--out")


def build(warehouse_path: str | os.PathLike | None = None, out: str | os.PathLike = DEFAULT_OUT) -> tuple[Path, ReportData]:
    """Write the HTML report of the warehouse's published snapshot to ``out`` (atomically)."""
    from acceptgate.report import html
    from acceptgate.report.data import collect

    out = check_output(out)
    data = collect(warehouse.snapshot_path(warehouse.resolve_path(warehouse_path)))
    out.parent.mkdir(parents=True, exist_ok=True)
    return html.write(html.page(data), out), data


def __getattr__(name: str):
    """ReportData, Section and collect from ``data`` on first use: it imports pandas, which the CLI's
    start (every command's parser imports this package) should not pay for."""
    if name in ("ReportData", "Section", "collect"):
        from acceptgate.report import data

        return getattr(data, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
