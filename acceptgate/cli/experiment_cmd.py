"""acceptgate experiment NAME [...]: re-run a seed's experiment on this project's data; prints the seed's
table beside the measured one and stores both (tables experiment_runs, experiment_rows).

    acceptgate experiment r532 [--gate-run ID] [--gated conform] [--baseline off]
"""

from __future__ import annotations

from acceptgate import warehouse
from acceptgate.cli import checks
from acceptgate.errors import InvalidInput


def add_parser(sub) -> None:
    p = sub.add_parser("experiment", help="re-run a seed's experiment and print the seed's figures beside the "
                                          "measured ones (stored in experiment_* tables)")
    names = p.add_subparsers(dest="experiment", metavar="NAME", required=True)

    r = names.add_parser("r532", help="seed 000 R532: false delivery over all tasks and over delivered, and the "
                                      "same-denominator relative cut, from a gate run and the seed's own counts",
                         description="Without --gate-run and with no gate run in the warehouse: the golden case "
                                     "only (the seed's counts: 14.4%% / 14.8%% / 25.2%% / about 43%%, not halved).")
    r.add_argument("--gate-run", metavar="ID", help="gate run id (default: the latest finished one, if any)")
    r.add_argument("--gated", default="conform", help="the gated arm (default conform)")
    r.add_argument("--baseline", default="off", help="the ungated arm (default off)")
    _common(r)
    r.set_defaults(func=run_r532)


def _common(p) -> None:
    p.add_argument("--warehouse", metavar="PATH",
                   help=f"DuckDB file (default: ${warehouse.ENV_PATH} or {warehouse.DEFAULT_PATH})")
    p.add_argument("--no-store", action="store_true", help="print only; write nothing")


def _finish(args, result) -> int:
    if args.no_store:
        print(result.format())
        return 0
    from acceptgate.experiments import store

    path = checks.warehouse_ready(args.warehouse)  # before printing: a bad path is exit 2 with nothing shown
    print(result.format())
    store.write(path, result)
    print(f"warehouse: {path} (experiment_runs, experiment_rows; run {result.run_id})")
    return 0


def run_r532(args) -> int:
    from acceptgate.experiments import r532

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
    if not path.exists():
        return False
    with warehouse.connect(path, read_only=True) as con:
        tables = {r[0] for r in con.execute("select table_name from information_schema.tables").fetchall()}
        return "gate_runs" in tables and con.execute(
            "select count(*) from gate_runs where status = 'ok'").fetchone()[0] > 0
