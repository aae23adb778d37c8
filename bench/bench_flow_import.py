"""The flows' import (audit --dataset, gate --humanevalplus, the leak audit, the nightly chain): cold,
then from the import cache.

    python3 bench/bench_flow_import.py                     # HumanEval+ and MBPP+ (the docs' figures)
    python3 bench/bench_flow_import.py --datasets humanevalplus --runs 3

For each data set (``../shared/data``, or ``$ACCEPTGATE_SHARED_DATA``), in this process, on the local
sandbox: ``ingest.load_result`` on an empty cache directory (the importer runs, its suites directory is
written to the cache and read back), then again on the filled cache (the suites directory is read with
the one reader: every literal through the grammar, both hashes checked). Each timing is the median of
``--runs``; the cache starts empty for every cold run. Writes ``bench/out/bench_flow_import.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_agreement import DATA  # noqa: E402  (the same data files as the other benches)

from acceptgate.scoring import ingest  # noqa: E402
from acceptgate.sandbox import backend as backends  # noqa: E402

LOADERS = ("humanevalplus", "mbppplus")


def measure(dataset: str, runs: int) -> dict:
    path = DATA[dataset]
    cold, warm, check, cases = [], [], [], 0
    with backends.create("local") as backend:
        for _ in range(runs):
            with tempfile.TemporaryDirectory(prefix="bench-flow-import-") as tmp:
                cache = Path(tmp)
                started = time.perf_counter()
                result, hit = ingest.load_result(dataset, path, backend, cache_dir=cache)
                cold.append(time.perf_counter() - started)
                assert not hit
                started, cpu = time.perf_counter(), time.process_time()
                again, hit = ingest.load_result(dataset, path, backend, cache_dir=cache)
                warm.append(time.perf_counter() - started)
                check.append(time.process_time() - cpu)  # warm is the read: the check is all of it
                assert hit and len(again.tasks) == len(result.tasks)
                size = sum(p.stat().st_size for p in cache.rglob("*") if p.is_file())
                cases = sum(len(s.cases) for t in result.tasks for s in t.suites.values())
    return {"dataset": dataset, "tasks": len(result.tasks), "cases": cases, "runs": runs,
            "cold_seconds": statistics.median(cold), "warm_seconds": statistics.median(warm),
            "check_cpu_seconds": statistics.median(check),
            "cold_all": cold, "warm_all": warm, "check_all": check, "cache_bytes": size}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", choices=LOADERS, default=list(LOADERS))
    ap.add_argument("--runs", type=int, default=1)
    args = ap.parse_args()
    load_before = os.getloadavg()[0]
    rows = [measure(d, args.runs) for d in args.datasets]
    load_after = os.getloadavg()[0]
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"{stamp}, load average {load_before:.1f} before, {load_after:.1f} after, median of {args.runs}")
    print("| data set | tasks | cases (both suites) | cold: import and store | warm: from the cache | "
          "warm CPU (the read, every literal checked) | cache entry |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['dataset']} | {r['tasks']} | {r['cases']:,} | {r['cold_seconds']:.1f} s | "
              f"{r['warm_seconds']:.1f} s | {r['check_cpu_seconds']:.1f} s | {r['cache_bytes'] / 1e6:.0f} MB |")
    out = REPO / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "bench_flow_import.json").write_text(json.dumps(
        {"measured": stamp, "load_before": load_before, "load_after": load_after, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
