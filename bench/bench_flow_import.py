"""The flows' import (audit --dataset, gate --humanevalplus, the leak audit, the nightly chain): cold,
then from the import cache.

    python3 bench/bench_flow_import.py                     # HumanEval+ and MBPP+ (the README figures)
    python3 bench/bench_flow_import.py --datasets humanevalplus --runs 3

For each data set (``../shared/data``, or ``$ACCEPTGATE_SHARED_DATA``), in this process, on the local
sandbox: ``importcache.load_import`` on an empty cache directory (the importer runs and its result is
stored), then again on the filled cache (the result is read back). Each timing is the median of
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

from acceptgate import importcache  # noqa: E402
from acceptgate.importers import humanevalplus, mbppplus  # noqa: E402
from acceptgate.sandbox import backend as backends  # noqa: E402

LOADERS = {"humanevalplus": humanevalplus.load, "mbppplus": mbppplus.load}


def measure(dataset: str, runs: int) -> dict:
    path = DATA[dataset]
    cold, warm, check, cases = [], [], [], 0
    with backends.create("local") as backend:
        for _ in range(runs):
            with tempfile.TemporaryDirectory(prefix="bench-flow-import-") as tmp:
                cache = Path(tmp)
                started = time.perf_counter()
                result, hit = importcache.load_import(dataset, path, lambda: LOADERS[dataset](path, backend),
                                                      cache_dir=cache)
                cold.append(time.perf_counter() - started)
                assert not hit
                started = time.perf_counter()
                again, hit = importcache.load_import(dataset, path, lambda: None, cache_dir=cache)
                warm.append(time.perf_counter() - started)
                assert hit and len(again.tasks) == len(result.tasks)
                started = time.process_time()  # the part of warm that re-derives every suite (checked_result)
                importcache.checked_result(again)
                check.append(time.process_time() - started)
                size = sum(p.stat().st_size for p in cache.rglob(importcache.RESULT_FILE))
                cases = sum(len(s.cases) for t in result.tasks for s in t.suites.values())
    return {"dataset": dataset, "tasks": len(result.tasks), "cases": cases, "runs": runs,
            "cold_seconds": statistics.median(cold), "warm_seconds": statistics.median(warm),
            "check_cpu_seconds": statistics.median(check),
            "cold_all": cold, "warm_all": warm, "check_all": check, "cache_bytes": size}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", choices=sorted(LOADERS), default=sorted(LOADERS))
    ap.add_argument("--runs", type=int, default=1)
    args = ap.parse_args()
    load_before = os.getloadavg()[0]
    rows = [measure(d, args.runs) for d in args.datasets]
    load_after = os.getloadavg()[0]
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"{stamp}, load average {load_before:.1f} before, {load_after:.1f} after, median of {args.runs}")
    print("| data set | tasks | cases (both suites) | cold: import and store | warm: from the cache | "
          "of which the check (CPU) | cache entry |")
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
