"""acceptgate command line. Each command parses, calls one library function, and maps the library's
exceptions to a message and an exit code (the contract, docs/commands/index.md, "Exit codes"):

0 done (whatever the verdicts were); 1 a pipeline check (an expectation) failed, nothing of that stage
written; 2 invalid input (a file, record, field or output path, named), nothing written; 3 a sandbox
backend cannot run here; 4 the warehouse is locked by another process, nothing written; 130 / 143 stopped by SIGINT / SIGTERM
(the run's attempt marked 'interrupted', nothing of it published, every child process and temp dir gone).
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys

from acceptgate._util import interrupt
from acceptgate._util.errors import Interrupted, InvalidInput
from acceptgate.sandbox.backend import BackendUnavailable

EXIT_DONE = 0
EXIT_EXPECTATION = 1
EXIT_INVALID = 2
EXIT_UNAVAILABLE = 3
EXIT_LOCKED = 4

# Subcommand modules, each with ``add_parser(subparsers)`` that sets ``func`` on its parser.
COMMAND_MODULES = [
    "acceptgate.cli.spec_cmd",
    "acceptgate.cli.exec_cmd",
    "acceptgate.cli.audit_cmd",
    "acceptgate.cli.import_cmd",
    "acceptgate.cli.score_cmd",
    "acceptgate.cli.gate_cmd",
    "acceptgate.cli.sandbox_cmd",
    "acceptgate.cli.serve_api_cmd",
    "acceptgate.cli.sql_cmd",
    "acceptgate.cli.leak_audit_cmd",
    "acceptgate.cli.backfill_cmd",
    "acceptgate.cli.stats_cmd",
    "acceptgate.cli.judge_cmd",
    "acceptgate.cli.study_cmd",
    "acceptgate.cli.certify_cmd",
    "acceptgate.cli.serve_cmd",
    "acceptgate.cli.report_cmd",
    "acceptgate.cli.experiment_cmd",
    "acceptgate.cli.dask_cmd",
    "acceptgate.cli.cache_cmd",
]


def command_module(argv: list[str]) -> str | None:
    """The module of the command argv names (``serve-api ...`` -> acceptgate.cli.serve_api_cmd), or None
    (no command, an option first, an unknown name): then every command's parser is built."""
    if not argv or argv[0].startswith("-"):
        return None
    name = f"acceptgate.cli.{argv[0].replace('-', '_')}_cmd"
    return name if name in COMMAND_MODULES else None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Every command's parser, or only the named module's: a command imports its own dependencies and
    not all eighteen commands' (pydantic, numpy, DuckDB: about 0.4 s of CPU at every start)."""
    parser = argparse.ArgumentParser(
        prog="acceptgate",
        description="Keep code-generation evaluations honest: suites as data, a sandbox that hides "
        "the oracle, acceptance gates and audits.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES if only is None else [only]:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # a command not built yet
                continue
            raise
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    previous = interrupt.install()  # first: a signal from here on stops cleanly (exit 130 / 143)
    try:
        return _main(argv)
    finally:
        interrupt.restore(previous)  # main() called in-process (tests) leaves the caller's handlers


def _main(argv: list[str] | None) -> int:
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        args = build_parser(command_module(argv)).parse_args(argv)
    except (Interrupted, KeyboardInterrupt) as exc:
        interrupt.finish(getattr(exc, "signum", signal.SIGINT), "acceptgate: stopped before any work")
    try:
        code = args.func(args)
    except InvalidInput as exc:
        print(f"acceptgate {args.command}: invalid input: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except BackendUnavailable as exc:
        print(f"acceptgate {args.command}: sandbox backend unavailable: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except (Interrupted, KeyboardInterrupt, Exception) as exc:  # noqa: BLE001  (mapped below, else re-raised)
        # a stop, also one that a library caught and failed on its way out of (the stop is its cause or
        # context), or any error raised while a stop unwinds
        signum = interrupt.stop_signal(exc) or interrupt.received()
        if signum:
            interrupt.finish(signum, stopped_line(args, signum))
        mapped = _pipeline_error(args.command, exc)
        if mapped is None:
            raise
        return mapped
    return int(code or 0)


# What a stopped command kept, by command (the rest: nothing written).
KEPT_ON_STOP = {
    "run": "this run's attempt is marked 'interrupted' and nothing of it was published; the analysts' "
           "snapshot still holds the last published runs",
    "serve-api": "every decision already answered is kept in the service's journal",
    "serve": "the schedules stopped with the local Prefect server; the warehouse keeps every finished run",
    "import": "the suites directory is unchanged (it is replaced only when an import completes)",
}
RUN_COMMANDS = {"audit", "gate", "leak-audit", "backfill", "certify", "stats", "judge", "score"}


def stopped_line(args, signum: int) -> str:
    """The one line a stopped command prints: what was kept. A run command names the attempt it marked
    'interrupted', and says so when it was stopped before it had recorded one."""
    name = signal.Signals(signum).name
    kept = KEPT_ON_STOP.get("run" if args.command in RUN_COMMANDS else args.command, "nothing was written")
    if args.command in RUN_COMMANDS:
        ledger = sys.modules.get("acceptgate.pipelines.ledger")  # not imported: no run was recorded
        stopped, started = (ledger.STOPPED, ledger.STARTED) if ledger is not None else ([], [])
        if stopped:
            kept = kept.replace("this run's attempt", f"the attempt of run {stopped[-1]}")
        elif started:  # the warehouse stayed locked: the attempt's end is left to the next one
            kept = (f"the attempt of run {started[-1]} could not be marked (the warehouse was locked): the next "
                    "attempt marks it failed; nothing of it was published")
        else:
            kept = "stopped before its run was recorded: nothing was written to the warehouse"
    return f"acceptgate {args.command}: stopped by {name}: {kept}"


def _pipeline_error(command: str, exc: Exception) -> int | None:
    """Exit code and message for the warehouse's and the expectations' errors. Their modules (DuckDB,
    pandas, GE) are looked up, not imported: a command that never loaded them cannot raise them."""
    expectations = sys.modules.get("acceptgate.store.expectations")
    if expectations is not None and isinstance(exc, expectations.ExpectationFailed):
        print(f"acceptgate {command}: {exc.message()}", file=sys.stderr)
        return EXIT_EXPECTATION
    warehouse = sys.modules.get("acceptgate.store.warehouse")
    if warehouse is not None and isinstance(exc, warehouse.WarehouseLocked):
        print(f"acceptgate {command}: warehouse locked: {exc} Nothing was written; run again once the other "
              "process has finished.", file=sys.stderr)
        return EXIT_LOCKED
    if warehouse is not None and isinstance(exc, warehouse.WarehouseError):
        print(f"acceptgate {command}: invalid input: warehouse: {exc}", file=sys.stderr)
        return EXIT_INVALID
    return None


if __name__ == "__main__":
    sys.exit(main())
