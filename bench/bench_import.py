"""Suite import against EvalPlus's own ground truth: cold, warm and peak memory, in one run.

    python3 bench/bench_import.py                                  # HumanEval+ and MBPP+ (the README table)
    python3 bench/bench_import.py --datasets humanevalplus --runs 3

For each data set, on the same data file (``../shared/data``, or ``$ACCEPTGATE_SHARED_DATA``):

- acceptgate cold: ``python3 -m acceptgate.cli import DATASET --path FILE --out DIR --cache-dir EMPTY``;
  the import's own time (its ``wrote ... in`` line), the wall time with the CLI start, and the peak RSS
  of the importing process (the references run in sandbox processes of their own);
- acceptgate warm: the same command again on the cache the cold run filled;
- EvalPlus 0.3.1 cold: ``get_groundtruth`` on an empty cache (``XDG_CACHE_HOME`` in a fresh directory), in
  its own venv (``--evalplus-venv``, default ``bench/.venv-evalplus``), given the same file through
  ``HUMANEVAL_OVERRIDE_PATH`` / ``MBPP_OVERRIDE_PATH``; the time of ``get_groundtruth`` alone and the
  wall time of the process, and its peak RSS.

The runs are sequential (never two at once, so neither slows the other), ``--runs`` times each; the
table shows the median and the load average before and after. Writes ``bench/out/bench_import.json``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from bench_agreement import DATA, OVERRIDE, evalplus_python  # noqa: E402  (same files, same venv)

# EvalPlus's cold ground truth, as its evaluate() computes it (mbpp: with its output-not-none tasks).
EVALPLUS_DRIVER = r"""
import json, sys, time
started = time.perf_counter()
if sys.argv[1] == "humanevalplus":
    from evalplus.data import get_human_eval_plus as get, get_human_eval_plus_hash as get_hash
    not_none = []
else:
    from evalplus.data import get_mbpp_plus as get, get_mbpp_plus_hash as get_hash
    from evalplus.eval._special_oracle import MBPP_OUTPUT_NOT_NONE_TASKS as not_none
from evalplus.evaluate import get_groundtruth
problems, digest = get(), get_hash()
loaded = time.perf_counter()
get_groundtruth(problems, digest, not_none)
print("AG-TIMING " + json.dumps({"load": loaded - started, "ground_truth": time.perf_counter() - loaded}),
      flush=True)
"""


def measured(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, int, str]:
    """(wall seconds, peak RSS in bytes, stdout + stderr) of a command; SystemExit if it fails.

    The peak RSS is the child's own (wait4), not RUSAGE_CHILDREN's maximum over every child so far."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # read both pipes to the end without waiting on the process (wait4 below reaps it)
    out_chunks, err_chunks = [], []
    def drain(pipe, into):
        for chunk in iter(lambda: pipe.read(65536), b""):
            into.append(chunk)

    readers = [threading.Thread(target=drain, args=(proc.stdout, out_chunks)),
               threading.Thread(target=drain, args=(proc.stderr, err_chunks))]
    for r in readers:
        r.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    for r in readers:
        r.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    out = b"".join(out_chunks).decode("utf-8", "replace")
    err = b"".join(err_chunks).decode("utf-8", "replace")
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {(err or out)[-2000:]}")
    return wall, usage.ru_maxrss * 1024, out + err


def acceptgate_import(dataset: str, out: Path, cache: Path) -> dict:
    cmd = [sys.executable, "-m", "acceptgate.cli", "import", dataset, "--path", str(DATA[dataset]),
           "--out", str(out), "--cache-dir", str(cache)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    wall, peak, text = measured(cmd, env, REPO)
    took = re.search(r"^wrote .* in ([0-9.]+) s", text, re.M)
    coverage = re.search(r"^coverage: .*$", text, re.M)
    return {"seconds": float(took.group(1)) if took else None, "wall": wall, "peak_rss": peak,
            "coverage": coverage.group(0) if coverage else None, "cached": "from the import cache" in text}


def evalplus_groundtruth(python: str, dataset: str, tmp: Path) -> dict:
    data = tmp / f"{dataset}.jsonl"
    if not data.exists():  # EvalPlus reads plain jsonl
        with gzip.open(DATA[dataset], "rb") as f:
            data.write_bytes(f.read())
    cache = Path(tempfile.mkdtemp(dir=tmp, prefix="evalplus-cache-"))
    env = {**os.environ, OVERRIDE[dataset]: str(data), "XDG_CACHE_HOME": str(cache)}
    wall, peak, text = measured([python, "-c", EVALPLUS_DRIVER, dataset], env, tmp)
    timing = next(json.loads(line[10:]) for line in text.splitlines() if line.startswith("AG-TIMING "))
    return {"seconds": timing["ground_truth"], "load": timing["load"], "wall": wall, "peak_rss": peak}


def median(rows: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in rows if r.get(key) is not None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="humanevalplus,mbppplus")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--evalplus-venv", type=Path,
                        default=Path(os.environ.get("ACCEPTGATE_EVALPLUS_VENV", REPO / "bench" / ".venv-evalplus")))
    parser.add_argument("--skip-evalplus", action="store_true")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "bench_import.json")
    args = parser.parse_args(argv)
    datasets = [d for d in args.datasets.split(",") if d]
    unknown = [d for d in datasets if d not in DATA]
    if unknown:
        print(f"--datasets: unknown {', '.join(unknown)} (known: {', '.join(DATA)})", file=sys.stderr)
        return 2
    python = None if args.skip_evalplus else evalplus_python(args.evalplus_venv)
    report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cores": os.cpu_count(),
              "load_before": os.getloadavg()[0], "datasets": {}}
    with tempfile.TemporaryDirectory(prefix="bench-import-") as tmp_name:
        tmp = Path(tmp_name)
        for dataset in datasets:
            cold, warm, theirs = [], [], []
            for run in range(args.runs):
                cache = tmp / f"cache-{dataset}-{run}"
                cold.append(acceptgate_import(dataset, tmp / f"cold-{dataset}-{run}", cache))
                warm.append(acceptgate_import(dataset, tmp / f"warm-{dataset}-{run}", cache))
                if python:
                    theirs.append(evalplus_groundtruth(python, dataset, tmp))
                print(f"{dataset} run {run + 1}: cold {cold[-1]['seconds']:.1f} s, warm {warm[-1]['wall']:.1f} s"
                      + (f", EvalPlus {theirs[-1]['seconds']:.1f} s" if theirs else ""), file=sys.stderr)
            report["datasets"][dataset] = {"acceptgate_cold": cold, "acceptgate_warm": warm, "evalplus_cold": theirs}
    report["load_after"] = os.getloadavg()[0]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")

    print(f"measured {report['date']}, {report['cores']} cores, load average {report['load_before']:.1f} before, "
          f"{report['load_after']:.1f} after; median of {args.runs} run(s)\n")
    print("| data set | coverage | acceptgate cold (wall, peak RSS) | warm, from the cache (wall) "
          "| EvalPlus 0.3.1 cold ground truth (wall, peak RSS) |")
    print("| --- | --- | --- | --- | --- |")
    for dataset, r in report["datasets"].items():
        cold, warm, theirs = r["acceptgate_cold"], r["acceptgate_warm"], r["evalplus_cold"]
        ours = (f"{median(cold, 'seconds'):.1f} s ({median(cold, 'wall'):.1f} s, "
                f"{median(cold, 'peak_rss') / 2 ** 20:.0f} MB)")
        them = (f"{median(theirs, 'seconds'):.1f} s ({median(theirs, 'wall'):.1f} s, "
                f"{median(theirs, 'peak_rss') / 2 ** 20:.0f} MB)") if theirs else "not run"
        coverage = (cold[0]["coverage"] or "?").removeprefix("coverage: ")
        print(f"| {dataset} | {coverage} | {ours} | {median(warm, 'wall'):.1f} s | {them} |")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
