"""Reading a suites directory: what every command pays before it runs anything.

    python3 bench/bench_load.py DIR [DIR ...] [--runs 3]

DIR: a suites directory written by ``acceptgate import`` (e.g. ``acceptgate import humanevalplus --path
../shared/data/humanevalplus/HumanEvalPlus-v0.1.10.jsonl.gz --out DIR``). Each run reads it with
``suitefiles.read_suites`` in this process -- the one reader: every literal through the grammar, both
hashes against the manifest -- and reports the CPU seconds of this process (``time.process_time``) and
the wall time; the best of ``--runs``. To measure an older tree, run this file with that tree's package
first on ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from acceptgate.datasets import suitefiles  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="+", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    import acceptgate

    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, acceptgate from {Path(acceptgate.__file__).parent}, "
          f"load {os.getloadavg()[0]:.1f}")
    print("| suites | tasks | cases | CPU s (best) | wall s (best) |\n|---|---:|---:|---:|---:|")
    for d in args.dirs:
        best_cpu = best_wall = float("inf")
        for _ in range(args.runs):
            cpu, wall = time.process_time(), time.perf_counter()
            sd = suitefiles.read_suites(d)
            best_cpu = min(best_cpu, time.process_time() - cpu)
            best_wall = min(best_wall, time.perf_counter() - wall)
        cases = sum(len(s.cases) for t in sd.tasks.values() for s in t.suites.values())
        print(f"| {sd.dataset} ({d.name}) | {len(sd.tasks)} | {cases:,} | {best_cpu:.2f} | {best_wall:.2f} |")
    print(f"load {os.getloadavg()[0]:.1f} after")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
