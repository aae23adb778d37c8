"""acceptgate sql "<query>" [--format table|csv|json] [--warehouse PATH]

A read-only analyst query on the published snapshot (``<warehouse>.snapshot.duckdb``), never the live
file: it works while a run writes, and only ever sees runs that completed. A query DuckDB refuses (a
syntax error, an unknown table, a write, any file or extension access, a setting) is invalid input
(exit 2): the session reaches the snapshot and nothing else (``warehouse.open_snapshot``).
"""

from __future__ import annotations

import csv
import datetime
import decimal
import json
import sys
import uuid

import duckdb

from acceptgate.store import warehouse
from acceptgate._util.errors import InvalidInput

FORMATS = ("table", "csv", "json")


def add_parser(sub) -> None:
    p = sub.add_parser(
        "sql", help="query the warehouse's published snapshot, read-only (works while a run writes)",
        description="Run one SQL query on the read-only snapshot that every successful run publishes next to "
                    "the warehouse (it holds complete runs only) and print the result. The session reaches the snapshot "
                    "and nothing else: files (COPY, EXPORT, ATTACH, read_csv, glob, ...), extensions and settings "
                    "are refused (exit 2). Tables and views: docs/warehouse.md.")
    p.add_argument("query", help='SQL, e.g. "select * from run_summary"')
    p.add_argument("--format", choices=FORMATS, default="table",
                   help="table (default; every row), csv (with a header) or json (a list of objects)")
    p.add_argument("--warehouse", metavar="PATH",
                   help=f"the live DuckDB file whose snapshot to read (default: ${warehouse.ENV_PATH} or "
                        f"{warehouse.DEFAULT_PATH}); the snapshot is <name>.snapshot.duckdb beside it")
    p.set_defaults(func=run)


def run(args) -> int:
    try:
        return _query(args)
    except warehouse.WarehouseError as exc:  # the snapshot exists but DuckDB cannot open it
        print(f"acceptgate sql: warehouse: {exc}", file=sys.stderr)
        return 3


def _query(args) -> int:
    with warehouse.open_snapshot(args.warehouse) as con:
        try:
            relation = con.sql(args.query)
            if relation is None:  # a statement without a result (e.g. SET)
                return 0
            if args.format == "table":
                relation.show(max_rows=1 << 62, max_width=1 << 15, max_col_width=1 << 15, null_value="NULL")
                return 0
            columns, rows = relation.columns, relation.fetchall()
        except duckdb.Error as exc:
            raise InvalidInput(_failure(exc), field="query") from None
    if args.format == "csv":
        out = csv.writer(sys.stdout, lineterminator="\n")
        out.writerow(columns)
        out.writerows([[_csv_value(v) for v in row] for row in rows])
    else:
        json.dump([dict(zip(columns, row)) for row in rows], sys.stdout, default=_json_value, indent=1)
        sys.stdout.write("\n")
    return 0


# What the analyst session refuses by construction (``warehouse.ANALYST_SESSION``), said as such.
OUT_OF_REACH = ("the query reaches outside the snapshot, which 'acceptgate sql' never does: no file is read or "
                "written (COPY, EXPORT, ATTACH, read_text, read_csv, glob, ...) and no extension is installed or "
                "loaded")
LOCKED = "the session's settings are locked (read-only, no external access)"


def _failure(exc: duckdb.Error) -> str:
    first = str(exc).splitlines()[0]
    if isinstance(exc, duckdb.PermissionException):
        return f"{OUT_OF_REACH}; the query failed: {first}"
    if "the configuration has been locked" in first:
        return f"{LOCKED}; the query failed: {first}"
    return f"the query failed: {first}"


def _csv_value(value):
    if isinstance(value, (list, dict)):
        return json.dumps(value, default=_json_value)
    return "" if value is None else value


def _json_value(value):
    if isinstance(value, (datetime.date, datetime.datetime, datetime.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, (uuid.UUID, datetime.timedelta, bytes)):
        return str(value)
    raise TypeError(f"cannot write {type(value).__name__} as JSON")
