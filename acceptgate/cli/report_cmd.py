"""acceptgate report [--warehouse PATH] [--out FILE]

Writes one self-contained HTML page (inline CSS and SVG charts, no scripts, nothing fetched) from the
warehouse's published snapshot, so it never waits for or disturbs a run that is writing.
"""

from __future__ import annotations

from acceptgate import report
from acceptgate.store import warehouse


def add_parser(sub) -> None:
    p = sub.add_parser(
        "report", help="write a self-contained HTML report from the warehouse's published snapshot",
        description="Sections: runs; false delivery by arm with Wilson 95% intervals (and a chart); audit "
                    "executions by verdict; V4V certification; leak verdicts; agreement with reference "
                    "evaluators and statistics. A section whose tables do not exist yet says 'not run yet'.")
    p.add_argument("--warehouse", metavar="PATH",
                   help=f"DuckDB file whose snapshot is read (default: ${warehouse.ENV_PATH} or "
                        f"{warehouse.DEFAULT_PATH}; the report reads <name>.snapshot.duckdb)")
    p.add_argument("--out", default=str(report.DEFAULT_OUT), metavar="FILE", help="HTML file (default %(default)s)")
    p.set_defaults(func=run)


def run(args) -> int:
    out, data = report.build(args.warehouse, args.out)
    ran = [s.title for s in data.sections if s.ran]
    print(f"report {out}: {len(ran)}/{len(data.sections)} sections with data ({', '.join(ran) or 'none'})")
    return 0
