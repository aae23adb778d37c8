"""acceptgate experiment NAME [...]: re-run a seed's experiment on this project's data; prints the seed's
table beside the measured one and stores both (tables experiment_runs, experiment_rows).

    acceptgate experiment r532 [--gate-run ID] [--gated conform] [--baseline off]
    acceptgate experiment seed000-layer4 --dataset HUMANEVALPLUS [--samples CODET] [--limit N]
    acceptgate experiment seed002 --suites DIR --dataset HUMANEVALPLUS [--samples CODET] [--limit N]
                                  [--verifier-command CMD ...]
"""

from __future__ import annotations

from acceptgate.store import warehouse
from acceptgate.cli import checks
from acceptgate._util.errors import InvalidInput


def add_parser(sub) -> None:
    p = sub.add_parser("experiment", help="re-run a seed's experiment and print the seed's figures beside the "
                                          "measured ones (stored in experiment_* tables)")
    names = p.add_subparsers(dest="experiment", metavar="NAME", required=True)

    r = names.add_parser("r532", help="seed 000 R532: false delivery over all tasks and over delivered, and the "
                                      "same-denominator relative cut, from a gate run and the seed's own counts",
                         description="Without --gate-run and with no gate run in the warehouse: the golden case "
                                     "only (the seed's counts: 14.4% / 14.8% / 25.2% / about 43%, not halved).")
    r.add_argument("--gate-run", metavar="ID", help="gate run id (default: the latest finished one, if any)")
    r.add_argument("--gated", default="conform", help="the gated arm (default conform)")
    r.add_argument("--baseline", default="off", help="the ungated arm (default off)")
    _common(r)
    r.set_defaults(func=run_r532)

    l4 = names.add_parser("seed000-layer4", help="seed 000 layer 4 on HumanEval+: exec smuggling against suites as "
                                                 "code vs as data, generic vs task-specific gauge, weak oracle, a "
                                                 "stateful suite (R451's shape)")
    l4.add_argument("--dataset", required=True, metavar="FILE", help="the HumanEval+ jsonl(.gz)")
    l4.add_argument("--samples", metavar="FILE", help="CodeT samples jsonl(.gz) (the gauge and oracle rows need them)")
    l4.add_argument("--limit", type=int, metavar="N", help="only the first N tasks")
    l4.add_argument("--per-task", type=int, default=6, metavar="N", help="samples per task (default %(default)s)")
    l4.add_argument("--workers", type=int, default=2, help="parallel executions (default %(default)s)")
    l4.add_argument("--backend", default="local", help="sandbox backend for the suites-as-data side (default local)")
    _common(l4)
    l4.set_defaults(func=run_layer4)

    s2 = names.add_parser("seed002", help="seed 002's certification table (V, GT, baselines, external verifiers) "
                                          "with the all-reject share of false rejections")
    s2.add_argument("--suites", required=True, metavar="DIR", help="suites directory (acceptgate import)")
    s2.add_argument("--dataset", required=True, metavar="FILE", help="the HumanEval+ jsonl(.gz) (the gold)")
    s2.add_argument("--samples", metavar="FILE", help="CodeT samples jsonl(.gz)")
    s2.add_argument("--limit", type=int, metavar="N", help="only the first N tasks")
    s2.add_argument("--verifier-command", action="append", default=[], metavar="CMD",
                    help="an external command verifier to certify too (repeat)")
    s2.add_argument("--repeat-all", action="store_true", help="re-run every candidate k times from reset")
    s2.add_argument("--workers", type=int, default=2, help="parallel executions (default %(default)s)")
    s2.add_argument("--backend", default="local", help="sandbox backend (default local)")
    _common(s2)
    s2.set_defaults(func=run_seed002)


def _common(p) -> None:
    p.add_argument("--warehouse", metavar="PATH",
                   help=f"DuckDB file (default: ${warehouse.ENV_PATH} or {warehouse.DEFAULT_PATH})")
    p.add_argument("--no-store", action="store_true", help="print only; write nothing")


def _finish(args, result) -> int:
    if args.no_store:
        print(result.format())
        return 0
    from acceptgate.pipelines.experiments import store

    path = checks.warehouse_ready(args.warehouse)  # before printing: a bad path is exit 2 with nothing shown
    print(result.format())
    store.write(path, result)
    print(f"warehouse: {path} (experiment_runs, experiment_rows; run {result.run_id})")
    return 0


def run_r532(args) -> int:
    from acceptgate.pipelines.experiments import r532

    path = warehouse.resolve_path(args.warehouse)
    if args.gate_run is None and not _has_gate_runs(path):
        result = r532.golden()
    else:
        if not path.exists():
            raise InvalidInput("no warehouse here: run 'acceptgate gate' first", source=str(path),
                               field="--warehouse")
        result = r532.from_gate_run(path, args.gate_run, gated=args.gated, baseline=args.baseline)
    return _finish(args, result)


def _has_gate_runs(path) -> bool:
    from acceptgate.pipelines.families import GATE

    if not path.exists():
        return False
    with warehouse.connect(path, read_only=True) as con:
        tables = {r[0] for r in con.execute("select table_name from information_schema.tables").fetchall()}
        return GATE.table in tables and con.execute(
            "select count(*) from gate_runs where status = 'ok'").fetchone()[0] > 0


def _positive(value, flag) -> None:
    if value is not None and value < 1:
        raise InvalidInput("must be at least 1", field=flag)


def _backend(name: str):
    from acceptgate.sandbox import backend as backends

    try:
        return backends.create(name)
    except ValueError as exc:
        raise InvalidInput(str(exc), field="--backend") from None


def _exists(path, flag) -> None:
    from pathlib import Path

    if path is not None and not Path(path).exists():
        raise InvalidInput("not found", source=str(path), field=flag)


def run_layer4(args) -> int:
    from acceptgate.pipelines.experiments import layer4

    _positive(args.limit, "--limit")
    _positive(args.per_task, "--per-task")
    _positive(args.workers, "--workers")
    _exists(args.dataset, "--dataset")
    _exists(args.samples, "--samples")
    result = layer4.run(args.dataset, _backend(args.backend), samples=args.samples, limit=args.limit,
                        per_task=args.per_task, workers=args.workers)
    return _finish(args, result)


def run_seed002(args) -> int:
    import dataclasses

    from acceptgate.pipelines.experiments import seed002
    from acceptgate.v4v import certify as C

    _positive(args.limit, "--limit")
    _positive(args.workers, "--workers")
    for flag in ("suites", "dataset", "samples"):
        _exists(getattr(args, flag), f"--{flag}")
    settings = C.with_external(dataclasses.replace(C.Settings(), workers=args.workers,
                                                   repeat_sample=-1 if args.repeat_all else 3),
                               args.verifier_command, [], None, args.dataset)
    result = seed002.run(args.suites, args.dataset, _backend(args.backend), settings, samples=args.samples,
                         limit=args.limit)
    return _finish(args, result)
