"""Speed of the paired statistics (not a test: prints figures).

    python bench/bench_stats.py [--configs 8] [--pairs 200] [--runs 3] [--resamples 10000] [--repeats 7] [--scipy]

The issue-12 target: 10,000-resample bootstrap CIs + a two-sided paired permutation test per
configuration + Holm over the configurations, for 8 configurations x 200 task pairs x 3 runs, in at most
0.1 s. Synthetic 0/1 verdicts (the timing does not depend on the values). Prints the median and the
best of the repeats, the machine's load average, and with --scipy the reference path (scipy
``bootstrap`` + ``permutation_test`` per configuration, statsmodels' Holm) on the same data, with the
largest difference in Delta and CI bounds between the two (the CIs use the same draws, so they agree
to rounding).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import numpy as np

from acceptgate.stats import PairedData, paired_effects, run_stability
from acceptgate.stats import resampling as rs


def synthetic(configs: int, pairs: int, runs: int, seed: int = 0) -> list[PairedData]:
    rng = np.random.default_rng(seed)
    units = tuple(f"pair{i}" for i in range(pairs))
    return [PairedData(f"config{c}", units, (rng.random((pairs, runs)) < 0.2).astype(float),
                       (rng.random((pairs, runs)) < 0.2 + 0.03 * c).astype(float), "E+", "E-")
            for c in range(configs)]


def timed(fn, repeats: int) -> tuple[float, float, float]:
    """(median wall, best wall, median CPU of this process): on a shared machine the CPU time shows the
    cost without the waiting for a core (BLAS runs single-threaded here, so CPU <= wall on a quiet one)."""
    times, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(times), min(times), statistics.median(cpu)


def scipy_reference(data: list[PairedData], resamples: int, seed: int):
    from scipy import stats as sps
    from statsmodels.stats.multitest import multipletests

    out = []
    for d in data:
        deltas = d.unit_deltas()
        a, b = d.unit_means()
        boot = sps.bootstrap((deltas,), np.mean, n_resamples=resamples, method="percentile",
                             rng=rs.generator(seed, rs.BOOTSTRAP, d.n))
        perm = sps.permutation_test((a, b), lambda x, y, axis: np.mean(y - x, axis=axis),
                                    permutation_type="samples", vectorized=True, n_resamples=resamples,
                                    rng=rs.generator(seed, rs.PERMUTATION, d.n))
        out.append((deltas.mean(), boot.confidence_interval.low, boot.confidence_interval.high, perm.pvalue))
    holm = multipletests([o[3] for o in out], method="holm")[1]
    return out, holm


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--configs", type=int, default=8)
    p.add_argument("--pairs", type=int, default=200)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--resamples", type=int, default=10_000)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--scipy", action="store_true", help="also time the scipy/statsmodels reference path")
    args = p.parse_args()
    data = synthetic(args.configs, args.pairs, args.runs)
    paired_effects(data, resamples=args.resamples, seed=args.seed)  # warm-up (imports, allocator)
    median, best, cpu = timed(lambda: paired_effects(data, resamples=args.resamples, seed=args.seed), args.repeats)
    report = {"configs": args.configs, "pairs": args.pairs, "runs": args.runs, "resamples": args.resamples,
              "repeats": args.repeats, "load_average": os.getloadavg(),
              "bootstrap_permutation_holm_seconds": {"median": round(median, 4), "best": round(best, 4),
                                                     "median_cpu": round(cpu, 4)},
              "target_seconds": 0.1, "meets_target_median": median <= 0.1}
    if args.runs >= 2:
        s_med, s_best, s_cpu = timed(lambda: run_stability(data, resamples=args.resamples, seed=args.seed),
                                     args.repeats)
        report["run_stability_seconds"] = {"median": round(s_med, 4), "best": round(s_best, 4),
                                           "median_cpu": round(s_cpu, 4)}
    if args.scipy:
        start = time.perf_counter()
        ref, holm = scipy_reference(data, args.resamples, args.seed)
        report["scipy_statsmodels_seconds"] = round(time.perf_counter() - start, 3)
        ours = paired_effects(data, resamples=args.resamples, seed=args.seed)
        report["max_abs_difference"] = {
            "delta": max(abs(o.delta - r[0]) for o, r in zip(ours, ref)),
            "ci": max(max(abs(o.ci_low - r[1]), abs(o.ci_high - r[2])) for o, r in zip(ours, ref)),
            "p (sampled nulls, different draws)": max(abs(o.p - r[3]) for o, r in zip(ours, ref)),
            "p_holm": max(abs(o.p_holm - h) for o, h in zip(ours, holm)),
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
