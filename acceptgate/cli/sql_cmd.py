"""acceptgate sql "<query>" [--format table|csv|json] [--warehouse PATH]

A read-only analyst query on the published snapshot (``<warehouse>.snapshot.duckdb``), never the live
file: it works while a run writes, and only ever sees runs that completed. A query DuckDB refuses (a
syntax error, an unknown table, a write) is invalid input (exit 2).
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
from acceptgate.errors import InvalidInput

FORMATS = ("table", "csv", "json")


def add_parser(sub) -> None:
    p = sub.add_parser(
        "sql", help="query the warehouse's published snapshot, read-only (works while a run writes)",
        description="Run one SQL query on the read-only snapshot that every successful run publishes next to "
                    "the warehouse (it holds complete runs only) and print the result. Tables and views: "
                    "sql/README.md.")
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
            raise InvalidInput(f"the query failed: {str(exc).splitlines()[0]}", field="query") from None
    if args.format == "csv":
        out = csv.writer(sys.stdout, lineterminator="\n")
        out.writerow(columns)
        out.writerows([[_csv_value(v) for v in row] for row in rows])
    else:
        json.dump([dict(zip(columns, row)) for row in rows], sys.stdout, default=_json_value, indent=1)
        sys.stdout.write("\n")
    return 0


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
