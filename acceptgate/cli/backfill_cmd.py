"""acceptgate backfill (--suites DIR | --humanevalplus FILE) [--since DATE] [--until DATE] [--run-id ID ...]
                     [--arm ARM ...] [--history FILE ...] [--no-warehouse-runs] [--warehouse PATH] ...

Runs the Prefect ``leak-backfill`` flow: a retro-scan of history (gate runs in the warehouse and jsonl
history files; all arms unless --arm) over a date range or run ids. Resumable and idempotent: records
already scanned with the same inputs are skipped. Prints verdict counts and comparison-item totals per
run and per arm; the same numbers are the views leak_run_summary and leak_arm_summary.
"""

from __future__ import annotations

from acceptgate.cli import checks
from acceptgate.cli.leak_audit_cmd import add_common, call_flow, check
from acceptgate.errors import InvalidInput
from acceptgate.leak import audit
from acceptgate.shards import DEFAULT_RECORDS_PER_SHARD


def add_parser(sub) -> None:
    p = sub.add_parser(
        "backfill", help="retro-scan history for hidden-test leaks over a date range / run ids / all arms; "
                         "resumable (a Prefect flow)",
        description="Scans every selected record (gate runs in the warehouse, jsonl history files) like "
                    "'acceptgate leak-audit', skipping records unchanged since their last scan, and prints "
                    "per-run and per-arm verdict counts and comparison-item totals.")
    add_common(p)
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
    path, history = check(args)

    def load():
        from acceptgate.flows.backfill import backfill
        return backfill

    return call_flow("backfill", args.quiet, load, history, suites_dir=args.suites, humanevalplus=args.humanevalplus, warehouse=path,
                     since=args.since, until=args.until, run_ids=args.run_ids, arms=args.arms, history=args.history,
                     include_warehouse=not args.no_warehouse_runs, matcher=args.matcher, rescan=args.rescan,
                     batch_records=args.batch_records, backend=args.backend, dask=args.dask,
                     shard_size=args.shard_size)
