"""acceptgate leak-audit (--suites DIR | --humanevalplus FILE) [--warehouse PATH] [--run-id ID ...]
                       [--arm ARM ...] [--history FILE ...] [--matcher aho|polars|disabled] [--rescan]

Runs the Prefect ``leak-audit`` flow: scans gate runs (and history files) for hidden-test material with
v1 (keyword) and v2 (authorship) side by side, one positive and one negative control per run, and
prints verdict counts and comparison items per run and per arm. Exit 0 whatever the verdicts (they
are results); 1 when a stage's rows break an expectation or the warehouse cannot be used; 2 for
invalid input (a bad history record names the file, line and field; nothing is written).
"""

from __future__ import annotations

import os
import time

from acceptgate.store import warehouse
from acceptgate.cli import checks, flowrun
from acceptgate._util.errors import InvalidInput
from acceptgate.leak import matcher as matchers
from acceptgate.leak import records


def add_common(p, tasks_required: bool = True) -> None:
    tasks = p.add_mutually_exclusive_group(required=tasks_required)
    tasks.add_argument("--suites", metavar="DIR", help="suites directory (from 'acceptgate import') holding the "
                                                       "tasks' hidden suites: the material looked for")
    tasks.add_argument("--humanevalplus", metavar="FILE", help="HumanEvalPlus jsonl(.gz): import its tasks now")
    p.add_argument("--warehouse", metavar="PATH",
                   help=f"DuckDB file (default: ${warehouse.ENV_PATH} or {warehouse.DEFAULT_PATH})")
    p.add_argument("--run-id", action="append", metavar="ID", dest="run_ids", help="only this run (repeatable)")
    p.add_argument("--arm", action="append", metavar="ARM", dest="arms", help="only this arm (repeatable)")
    p.add_argument("--history", action="append", metavar="FILE", default=[],
                   help="also scan the records of this jsonl(.gz) history file (format: docs/warehouse.md, 'History file format'; repeatable)")
    p.add_argument("--matcher", default=matchers.DEFAULT, choices=list(matchers.MATCHERS),
                   help="exact matcher (default aho; 'disabled' finds nothing, to watch the control fail)")
    p.add_argument("--rescan", action="store_true", help="scan records again even when their inputs are unchanged")
    p.add_argument("--backend", default="local", help="sandbox backend for --humanevalplus import (default local)")
    flowrun.add_quiet(p)


def add_parser(sub) -> None:
    p = sub.add_parser(
        "leak-audit", help="scan gate runs for hidden-test (GT) material: v1 keyword vs v2 authorship, with a "
                           "planted control; verdict per record (a Prefect flow)",
        description="A record (run, arm, task) is a violation when hidden-only material appears in text the "
                    "harness wrote, unverifiable when it cannot be cleared (texts/authors missing, run not closed, "
                    "control failed), else clean. Prints verdict counts and comparison items per run and arm.")
    add_common(p)
    p.set_defaults(func=run)


def check(args) -> tuple[str, records.History | None]:
    """Everything checkable before any work: paths, the output path, every history record. The history
    files are read here once (bounded, validated, spooled); the flow scans the spool."""
    for path, flag in ((args.humanevalplus, "--humanevalplus"), (args.suites, "--suites")):
        if path is not None and not os.path.exists(path):
            raise InvalidInput("not found", source=path, field=flag)
    try:
        matchers.check_name(args.matcher)
    except ValueError as exc:
        raise InvalidInput(str(exc), field="--matcher") from None
    # a bad record: InvalidInput naming file, line and field
    history = records.read_history(args.history) if args.history else None
    try:
        path = checks.warehouse_ready(args.warehouse)  # unwritable: exit 2; held by another process: exit 4
        if args.run_ids:  # every id checked before any flow starts: a bad one is exit 2 in seconds
            from acceptgate.pipelines.families import GATE

            known = set(checks.run_ids(path, GATE.table))
            if history is not None:
                known |= {r.run_id for batch in history.batches(10_000) for r in batch}
            unknown = [r for r in args.run_ids if r not in known]
            if unknown:
                raise InvalidInput(f"no gate run or history record with run id {', '.join(unknown[:5])}",
                                   field="--run-id")
        return str(path), history
    except BaseException:
        if history is not None:
            history.close()
        raise


def call_flow(name: str, quiet: bool, load, request, spooled: records.History | None = None) -> int:
    """Run the flow ``load()`` returns on ``request``, with the command's progress lines."""
    say = flowrun.Say(name, quiet)
    flowrun.prepare(say)
    fn = load()  # Prefect is imported here, and only here

    def progress(run_id: str, done: int, total: int, what: str) -> None:
        say(f"[{done}/{total} records] run {run_id}: {what}")

    say("loading the tasks' hidden material")
    # a failed expectation (exit 1), a lock (4) or another warehouse error (2): cli.main
    try:
        result = fn(request, progress=None if quiet else progress, spooled=spooled)
    finally:
        if spooled is not None:
            spooled.close()
    if result.seconds:  # the whole command's wall time too: Prefect's server start comes before the flow
        result.seconds["command (Prefect's start included)"] = time.monotonic() - say.started
    print("\n".join(result.lines()))
    return 0


OPTIONS = {"suites_dir": "--suites", "humanevalplus": "--humanevalplus", "warehouse": "--warehouse",
           "run_ids": "--run-id", "arms": "--arm", "history": "--history", "matcher": "--matcher",
           "rescan": "--rescan", "backend": "--backend", "since": "--since", "until": "--until",
           "include_warehouse": "--no-warehouse-runs", "batch_records": "--batch-records", "dask": "--dask",
           "shard_size": "--shard-size"}  # field -> its option (leak-audit and backfill)


def request_of(kind, args, **values):
    """The request the command's shared options and ``values`` ask for (InvalidInput naming the option)."""
    from acceptgate.pipelines import requests

    shared = {"suites_dir": args.suites, "humanevalplus": args.humanevalplus, "warehouse": args.warehouse,
              "run_ids": args.run_ids, "arms": args.arms, "history": args.history or [], "matcher": args.matcher,
              "rescan": args.rescan, "backend": args.backend}
    return requests.build(kind, {**shared, **values}, options=OPTIONS, record=kind.__name__)


def run(args) -> int:
    from acceptgate.pipelines.requests import LeakAuditRequest

    request_of(LeakAuditRequest, args)  # every option checked before any file is read
    path, history = check(args)

    def load():
        from acceptgate.flows.leak_audit import leak_audit
        return leak_audit

    args.warehouse = path
    return call_flow("leak-audit", args.quiet, load, request_of(LeakAuditRequest, args), history)
