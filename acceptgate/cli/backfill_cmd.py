"""acceptgate backfill (--suites DIR | --humanevalplus FILE) [--since DATE] [--until DATE] [--run-id ID ...]
                     [--arm ARM ...] [--history FILE ...] [--no-warehouse-runs] [--warehouse PATH] ...

Runs the Prefect ``leak-backfill`` flow: a retro-scan of history (gate runs in the warehouse and jsonl
history files; all arms unless --arm) over a date range or run ids. Resumable and idempotent: records
already scanned with the same inputs are skipped. Prints verdict counts and comparison-item totals per
run and per arm; the same numbers are the views leak_run_summary and leak_arm_summary.
"""

from __future__ import annotations

import datetime
import os

from acceptgate.cli import checks
from acceptgate.cli.leak_audit_cmd import add_common, call_flow, check, request_of
from acceptgate._util.errors import InvalidInput
from acceptgate.leak import audit
from acceptgate.pipelines.requests import LeakBackfillRequest
from acceptgate.pipelines.shards import DEFAULT_RECORDS_PER_SHARD


def add_parser(sub) -> None:
    p = sub.add_parser(
        "backfill", help="retro-scan history for hidden-test leaks over a date range / run ids / all arms; "
                         "resumable (a Prefect flow)",
        description="Scans every selected record (gate runs in the warehouse, jsonl history files) like "
                    "'acceptgate leak-audit', skipping records unchanged since their last scan, and prints "
                    "per-run and per-arm verdict counts and comparison-item totals.")
    add_common(p, tasks_required=False)  # default: where the selected gate runs recorded their tasks came from
    p.add_argument("--since", metavar="DATE", help="records of runs started at or after (YYYY-MM-DD or ISO time, UTC)")
    p.add_argument("--until", metavar="DATE", help="records of runs started before")
    p.add_argument("--no-warehouse-runs", action="store_true", help="only the --history files")
    p.add_argument("--batch-records", type=int, default=audit.BATCH_RECORDS, metavar="N",
                   help=f"records committed per transaction, whole runs (default {audit.BATCH_RECORDS})")
    checks.add_dask(p, "records", DEFAULT_RECORDS_PER_SHARD)
    p.set_defaults(func=run)


def run(args) -> int:
    since, until = audit.parse_time(args.since, "since"), audit.parse_time(args.until, "until")
    if since and until and since >= until:
        raise InvalidInput("must be before --until", record=args.since, field="--since")
    if args.batch_records < 1:
        raise InvalidInput("must be at least 1", field="--batch-records")
    if args.no_warehouse_runs and not args.history:
        raise InvalidInput("nothing to scan: give --history FILE", field="--no-warehouse-runs")
    checks.dask_ready(args)
    if args.suites is None and args.humanevalplus is None:
        _recorded_tasks(args, since, until)
    path, history = check(args)

    def load():
        from acceptgate.flows.backfill import backfill
        return backfill

    args.warehouse = path
    request = request_of(LeakBackfillRequest, args, since=args.since, until=args.until,
                         include_warehouse=not args.no_warehouse_runs, batch_records=args.batch_records,
                         dask=args.dask, shard_size=args.shard_size)
    return call_flow("backfill", args.quiet, load, request, history)


def _recorded_tasks(args, since, until) -> None:
    """Without --suites / --humanevalplus: the one tasks source the selected gate runs recorded
    (gate_runs.tasks_from, "<path> (...)"), when it is still there; else exit 2 saying which to give."""
    import sys

    from acceptgate.pipelines.families import GATE
    from acceptgate.store import warehouse

    path = warehouse.resolve_path(args.warehouse)
    recorded: set[str] = set()
    if path.exists() and not args.no_warehouse_runs:
        with warehouse.connect(path, read_only=True) as con:
            if GATE.table in {r[0] for r in con.execute("select table_name from information_schema.tables").fetchall()}:
                rows = con.execute("select run_id, started_at, tasks_from from gate_runs").fetchall()
                recorded = {tasks_from.split(" (", 1)[0] for run_id, started, tasks_from in rows
                            if (not args.run_ids or run_id in args.run_ids) and _in_range(started, since, until)}
    if len(recorded) != 1:
        said = "no gate run in the selection records its tasks" if not recorded else \
            f"the selected gate runs used {len(recorded)} task sources ({', '.join(sorted(recorded))})"
        raise InvalidInput(f"{said}: give --suites DIR or --humanevalplus FILE", field="--suites")
    source = recorded.pop()
    if os.path.isdir(source):
        args.suites = source
    elif os.path.isfile(source):
        args.humanevalplus = source
    else:
        raise InvalidInput(f"the gate runs' tasks came from {source}, which is no longer there: give --suites DIR "
                           "or --humanevalplus FILE", field="--suites")
    print(f"backfill: the tasks' hidden material from {source} (recorded by the gate runs)", file=sys.stderr)


def _in_range(started, since, until) -> bool:
    if started is None:
        return since is None and until is None
    if started.tzinfo is None:
        started = started.replace(tzinfo=datetime.timezone.utc)
    return (since is None or started >= since) and (until is None or started < until)
