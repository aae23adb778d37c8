"""acceptgate stats [--gate-run ID | --judge-run ID] [--baseline off] [--arm ARM] [--seed N]
                    [--resamples N] [--confidence C] [--warehouse PATH]

Runs the Prefect ``stats`` flow (imported only here) and prints each paired effect with its CI and
p-values, e.g. CONFORM vs OFF false delivery over all tasks, paired by task.
"""

from __future__ import annotations


from acceptgate.cli import checks, flowrun
from acceptgate.store import warehouse
from acceptgate._util.errors import InvalidInput
from acceptgate.stats.paired import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES


def add_parser(sub) -> None:
    p = sub.add_parser(
        "stats", help="paired statistics (Delta, bootstrap CI, permutation p, Holm, run stability, agreement) "
                      "over gate or judge results, written to stats_* tables (a Prefect flow)",
        description="Gate results: each arm against the baseline arm, paired by task, for false delivery and "
                    "delivery over all tasks of the gate run. Judge results: E+ vs E- violation rates paired by "
                    "task pair, runs averaged first, per agent configuration, plus run stability and "
                    "judge-vs-human agreement. Every row stores its seed, resamples and input hash.")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--gate-run", metavar="ID", help="gate run id (default: the latest finished gate run)")
    src.add_argument("--judge-run", metavar="ID", help="judge run id (from 'acceptgate judge')")
    p.add_argument("--audit-judge-run", metavar="ID",
                   help="with --judge-run: a second judge on the same trajectories; adds the centered-difference "
                        "comparison per configuration with its total interaction test")
    p.add_argument("--baseline", default="off", help="gate arm every other arm is compared with (default off)")
    p.add_argument("--arm", action="append", metavar="ARM", help="gate arms to compare (default: all others)")
    p.add_argument("--seed", type=int, default=0, help="seed of every random draw (stored with the rows)")
    p.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES,
                   help="bootstrap resamples and permutation draws (default %(default)s)")
    p.add_argument("--confidence", type=float, default=DEFAULT_CONFIDENCE, help="CI level (default 0.95)")
    p.add_argument("--warehouse", metavar="PATH",
                   help=f"DuckDB file (default: ${warehouse.ENV_PATH} or {warehouse.DEFAULT_PATH})")
    flowrun.add_quiet(p)
    p.set_defaults(func=run)


OPTIONS = {"gate_run": "--gate-run", "judge_run": "--judge-run", "audit_judge_run": "--audit-judge-run",
           "baseline": "--baseline", "arms": "--arm", "seed": "--seed", "resamples": "--resamples",
           "confidence": "--confidence", "warehouse": "--warehouse"}  # field -> its option


def run(args) -> int:
    from acceptgate.stats.pipeline import Settings, format_effects  # pandas: not on every CLI start

    if args.audit_judge_run and not args.judge_run:
        raise InvalidInput("needs --judge-run (the main judge)", field="--audit-judge-run")
    Settings(seed=args.seed, resamples=args.resamples, confidence=args.confidence).check()
    path = warehouse.resolve_path(args.warehouse)
    if not path.exists():
        raise InvalidInput("no warehouse here: run 'acceptgate gate' or 'acceptgate judge' first",
                           source=str(path), field="--warehouse")
    checks.warehouse_ready(str(path))  # unwritable: exit 2; held by another process: exit 4
    arms = [a.strip() for v in (args.arm or []) for a in v.split(",") if a.strip()] or None
    from acceptgate.pipelines import requests

    request = requests.build(requests.StatsRequest, {
        "warehouse": str(path), "gate_run": args.gate_run, "judge_run": args.judge_run,
        "audit_judge_run": args.audit_judge_run, "baseline": args.baseline, "arms": arms, "seed": args.seed,
        "resamples": args.resamples, "confidence": args.confidence}, options=OPTIONS, record="stats")
    # Every id and arm checked before any flow starts (a bad one: exit 2 in seconds). The flow reads
    # them again: the inputs are those of the moment it runs.
    if args.judge_run is not None:
        from acceptgate.pipelines import judge as judge_io

        for run_id in filter(None, (args.judge_run, args.audit_judge_run)):
            judge_io.read_verdicts(path, run_id)
    else:
        from acceptgate.pipelines.stats import gate_inputs

        gate_inputs(path, args.gate_run, baseline=args.baseline, arms=arms)
    say = flowrun.Say("stats", args.quiet)
    flowrun.prepare(say)
    from acceptgate.flows import stats as stats_flow  # Prefect is imported here, and only here

    say(f"paired statistics, {request.resamples} resamples")

    # a failed expectation (exit 1), a lock (4) or another warehouse error (2): cli.main
    result = stats_flow.stats(request)
    print("\n".join(format_effects(result)))
    print(f"warehouse: {path} (tables stats_runs, stats_effects, stats_stability, stats_agreement, "
          f"stats_judge_comparison; "
          f"view stats_report)")
    return 0
