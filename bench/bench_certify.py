"""Throughput of the whole V4V certification on real data (not a test: prints figures).

    python bench/bench_certify.py --suites DIR --dataset HumanEvalPlus.jsonl.gz --samples codet.jsonl.gz [--limit N]

Runs the core certification (no Prefect, no warehouse: ``acceptgate certify`` adds those) and reports
the wall time of each stage, executions and cases per second, and how much re-execution the reuse
saves: every suite verifier and each of its mutants decides from the one run per candidate and suite,
so the mutant decisions below would otherwise each be one more sandboxed execution. Prints the
certification table at the end. Say the date and the machine load beside any figure you quote.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from acceptgate.sandbox import backend as backends
from acceptgate.v4v import certify as C
from acceptgate.v4v.pools import PoolSettings


def _progress(stage: str, done: int, total: int, _shown: dict = {}) -> None:
    step = max(1, total // 10)  # about ten lines per stage on stderr
    if done == total or done - _shown.get(stage, 0) >= step:
        _shown[stage] = done
        print(f"{stage}: {done}/{total}", file=sys.stderr, flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--suites", required=True)
    p.add_argument("--dataset", required=True)
    p.add_argument("--samples")
    p.add_argument("--limit", type=int)
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    p.add_argument("--backend", default="local")
    p.add_argument("--samples-per-task", type=int, default=PoolSettings().samples_per_task)
    p.add_argument("--verifier-command", action="append", default=[], metavar="CMD",
                   help="also certify this command verifier (as acceptgate certify --verifier-command)")
    p.add_argument("--verifier-mount", action="append", default=[], metavar="PATH")
    p.add_argument("--evalplus-venv", metavar="DIR", help="also certify EvalPlus 0.3.1 from this venv")
    p.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = p.parse_args()
    load_before = os.getloadavg()
    t0 = time.monotonic()
    materials = C.load_materials(args.suites, args.dataset, args.samples, limit=args.limit)
    load_s = time.monotonic() - t0
    settings = C.Settings(workers=args.workers, pool=PoolSettings(samples_per_task=args.samples_per_task))
    settings = C.with_external(settings, args.verifier_command, args.verifier_mount, args.evalplus_venv, args.dataset)
    with backends.create(args.backend) as sandbox:
        started = time.monotonic()
        cert = C.certify(materials, sandbox, settings, _progress)
        total = time.monotonic() - started
    first = {k: r for k, r in cert.runs.items() if k[3] == 0}
    reruns = len(cert.runs) - len(first)
    cases = sum(len(r.statuses) for r in first.values())
    mutant_decisions = sum(len(v.mutants) * len(cert.kept[v.task_id]) for v in cert.verdicts)
    figures = {
        "tasks": len(materials), "candidates": sum(len(c) for c in cert.kept.values()),
        "proposed": sum(len(p.candidates) for p in cert.proposed), "backend": args.backend, "workers": args.workers,
        "load_seconds": round(load_s, 1), "pools_seconds": round(cert.seconds["pools"], 2),
        "runs": len(first), "cases_answered": cases, "execute_seconds": round(cert.seconds["execute"], 1),
        "reruns_from_reset": reruns, "repeat_seconds": round(cert.seconds["repeat"], 1),
        "decisions": len(cert.records), "mutant_decisions_without_execution": mutant_decisions,
        "decide_seconds": round(cert.seconds["decide"], 1), "certify_seconds": round(total, 1),
        "loadavg_before": [round(x, 2) for x in load_before], "loadavg_after": [round(x, 2) for x in os.getloadavg()],
    }
    print(f"{figures['tasks']} tasks, {figures['candidates']} candidates kept of {figures['proposed']} proposed, "
          f"backend {args.backend}, {args.workers} workers; load average before {figures['loadavg_before']}, "
          f"after {figures['loadavg_after']}")
    print(f"load suites + gold + samples: {load_s:.1f} s; build pools: {cert.seconds['pools']:.2f} s")
    print(f"execute once per candidate and suite: {len(first)} runs, {cases} cases in {cert.seconds['execute']:.1f} s "
          f"({len(first) / cert.seconds['execute']:.1f} runs/s, {cases / cert.seconds['execute']:.0f} cases/s)")
    print(f"re-run from reset (repeatability): {reruns} runs in {cert.seconds['repeat']:.1f} s")
    print(f"decide + gates + metrics: {len(cert.records)} decisions and {mutant_decisions} mutant decisions "
          f"(none re-executed) in {cert.seconds['decide']:.1f} s")
    print(f"certification total: {total:.1f} s")
    print(C.pool_counts(cert.kept, cert.checks))
    print(C.format_table(cert.reports))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({**figures, "table": [list(r) for r in C.table_rows(cert.reports)]}, fh, indent=1)


if __name__ == "__main__":
    main()
