"""Throughput of the gates and of batch scoring, on real data (not a test: prints figures).

    python bench/bench_gates.py --suites DIR --codet PATH [--arms conform,off] [--score-samples N]

Reports, per arm, tasks/s of the gate alone (replayed CodeT samples, visible suite in the sandbox),
then GT scoring of the delivered programs (programs/s), and -- with --score-samples N -- the
``acceptgate score`` throughput on the first N CodeT samples per task against the hidden suites
(samples/s). Run it on an idle machine: every figure is wall-clock.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

from acceptgate.gates import delivery
from acceptgate.gates import public_tasks, run_arm
from acceptgate.gates import run as core
from acceptgate.sandbox import backend as backends
from acceptgate.scoring.score import score_samples
from acceptgate.sources.codet import CodetSource
from acceptgate.datasets.samples import read_samples


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--suites", required=True)
    p.add_argument("--codet", required=True)
    p.add_argument("--arms", default="conform,off")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    p.add_argument("--backend", default="local")
    p.add_argument("--score-samples", type=int, default=0, metavar="N")
    args = p.parse_args()
    with backends.create(args.backend) as sandbox:
        tasks, _ = core.load_tasks(backend=sandbox, suites_dir=args.suites)
        source = CodetSource(args.codet)
        outcomes = []
        print(f"{len(tasks)} tasks, backend {args.backend}, {args.workers} workers")
        for arm in args.arms.split(","):
            started = time.monotonic()
            outs = run_arm(arm, public_tasks(tasks), source, sandbox, workers=args.workers)
            took = time.monotonic() - started
            draws = sum(o.attempts_used for o in outs)
            print(f"gate {arm}: {took:.1f} s, {len(tasks) / took:.1f} tasks/s, {draws} draws")
            outcomes += outs
        started = time.monotonic()
        rows = delivery.score_deliveries(outcomes, core.hidden_suites(tasks), sandbox, workers=args.workers)
        took = time.monotonic() - started
        programs = len({(r.task_id, r.candidate_sha256) for r in rows if r.delivered})
        print(f"GT scoring: {programs} distinct delivered programs in {took:.1f} s "
              f"({programs / took:.1f} programs/s)")
        print(delivery.format_summary(delivery.summarize(rows)))
        if args.score_samples:
            with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as fh:
                for row in source.solutions(args.score_samples):
                    fh.write(json.dumps(row) + "\n")
            sample_file = read_samples(fh.name)
            os.unlink(fh.name)
            hidden = core.hidden_suites(tasks)
            report = score_samples(sample_file, hidden, {t.task_id: t.prompt for t in tasks}, sandbox,
                                   suite="hidden", workers=args.workers,
                                   excluded={s.task_id: "not imported" for s in sample_file.samples
                                             if s.task_id not in hidden})
            print("score: " + report.summary())


if __name__ == "__main__":
    main()
