"""How the cost of gate and certify grows: seconds per task and peak memory at 10, 40 and 164 HumanEval+
tasks (and MBPP+ at 399: certify only -- the data has no MBPP+ model samples to gate), single-process
and on a Dask LocalCluster of 1 and of 2 worker processes (``--dask 1`` / ``--dask 2``).

    python3 bench/bench_scale.py                     # the full curve (hours on 2 cores; a quiet machine)
    python3 bench/bench_scale.py --tasks 10 --no-mbppplus --stages gate,certify     # a smoke run

Each measurement is the real command in a subprocess (``acceptgate gate|certify ... --no-gauge --quiet``
into a fresh warehouse), all against one Prefect server the bench starts, so no run pays a server start;
a Dask run pays its LocalCluster's start. Peak RSS: the largest sum of resident memory over the
command's whole process tree (client, Dask workers, sandboxes), sampled every 0.2 s; the warehouse's
size per task (the DuckDB file after the run). Every Dask run's
result rows are compared with the single-process run's (times aside): "rows equal" in the output.
Writes bench/out/scale.json (one object per run, appended across invocations) and bench/out/scale.png.

Settings: gate arms conform and off, 5 draws per task, CodeT CodeGen-16B samples; certify with the
default settings (k = 3, 3 re-run samples, the built-in verifiers). Single-process runs use 2 sandbox
threads (both cores); a Dask shard uses 1 (one sandbox per single-threaded worker), tasks per shard =
ceil(tasks / 8). Report the load average beside every figure: on a shared machine they move with it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))  # shard_rows: the row comparison the cluster tests use
SHARED = Path(os.environ.get("ACCEPTGATE_SHARED_DATA", REPO.parent / "shared" / "data"))
HEPLUS = SHARED / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz"
MBPPPLUS = SHARED / "mbppplus" / "MbppPlus-399.jsonl.gz"
CODET = SHARED / "samples" / "codet_codegen16B.jsonl.gz"
OUT = REPO / "bench" / "out"


def peak_tree_rss(proc: subprocess.Popen, stop: threading.Event, peak: list[int]) -> None:
    import psutil

    try:
        root = psutil.Process(proc.pid)
    except psutil.NoSuchProcess:
        return
    while not stop.is_set():
        total = 0
        try:
            for p in [root, *root.children(recursive=True)]:
                try:
                    total += p.memory_info().rss
                except psutil.Error:
                    pass
        except psutil.Error:
            break
        peak[0] = max(peak[0], total)
        stop.wait(0.2)


def run_command(argv: list[str], env: dict) -> tuple[float, int, str]:
    stop, peak = threading.Event(), [0]
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "acceptgate", *argv], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    watcher = threading.Thread(target=peak_tree_rss, args=(proc, stop, peak), daemon=True)
    watcher.start()
    out, _ = proc.communicate()
    seconds = time.monotonic() - started
    stop.set()
    watcher.join()
    if proc.returncode != 0:
        raise SystemExit(f"acceptgate {' '.join(argv)} exited {proc.returncode}:\n{out[-3000:]}")
    return seconds, peak[0], out


def stage_argv(stage: str, suites: str, dataset: Path, tasks: int, warehouse: Path) -> list[str]:
    if stage == "gate":
        return ["gate", "--arm", "conform,off", "--source", f"codet:{CODET}", "--suites", suites, "--limit", str(tasks),
                "--per-task", "5", "--warehouse", str(warehouse), "--no-gauge", "--quiet"]
    return ["certify", "--suites", suites, "--dataset", str(dataset), "--samples", str(CODET), "--limit", str(tasks),
            "--warehouse", str(warehouse), "--no-gauge", "--quiet"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default="10,40,164", help="HumanEval+ task counts (comma-separated)")
    ap.add_argument("--no-mbppplus", action="store_true", help="leave out MBPP+ at 399 tasks")
    ap.add_argument("--stages", default="gate,certify")
    ap.add_argument("--workers", default="1,2", help="Dask LocalCluster sizes (comma-separated)")
    args = ap.parse_args()
    counts = [int(x) for x in args.tasks.split(",")]
    stages = args.stages.split(",")
    cluster_sizes = [int(x) for x in args.workers.split(",")]

    from tasks import _prefect_env  # noqa: F401  (offline settings before prefect is imported)
    from flows import serve
    from shard_rows import table_rows

    tmp = Path(tempfile.mkdtemp(prefix="bench_scale."))
    OUT.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    plan = [("humanevalplus", HEPLUS, n, stages) for n in counts]
    if not args.no_mbppplus:
        plan.append(("mbppplus", MBPPPLUS, 399, [s for s in stages if s == "certify"]))
    results = []
    with serve.local_server(free_port()) as api:
        env["PREFECT_API_URL"] = api
        for dataset, path, n, its_stages in plan:
            suites = tmp / f"{dataset}-{n}"
            subprocess.run([sys.executable, "-m", "acceptgate", "import", dataset, "--path", str(path), "--out",
                            str(suites), "--limit", str(n)], cwd=REPO, env=env, check=True, capture_output=True)
            for stage in its_stages:
                single_wh = None
                for workers in [0, *cluster_sizes]:
                    warehouse = tmp / f"{stage}-{dataset}-{n}-{workers}.duckdb"
                    argv = stage_argv(stage, str(suites), path, n, warehouse)
                    if workers:
                        argv += ["--dask", str(workers), "--workers", "1", "--shard-size", str(math.ceil(n / 8))]
                    else:
                        argv += ["--workers", "2"]
                    load0 = os.getloadavg()[0]
                    seconds, rss, _ = run_command(argv, env)
                    row = {"stage": stage, "dataset": dataset, "tasks": n,
                           "runner": f"dask {workers} worker(s)" if workers else "single process",
                           "workers": workers, "seconds": round(seconds, 1), "seconds_per_task": round(seconds / n, 2),
                           "peak_rss_mib": round(rss / 2**20),
                           "warehouse_kib_per_task": round(warehouse.stat().st_size / 1024 / n),
                           "load_before": round(load0, 1),
                           "load_after": round(os.getloadavg()[0], 1),
                           "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cores": os.cpu_count()}
                    if workers == 0:
                        single_wh = warehouse
                    else:
                        row["rows_equal"] = table_rows(warehouse, stage) == table_rows(single_wh, stage)
                    results.append(row)
                    print(json.dumps(row), flush=True)
    with open(OUT / "scale.json", "a") as f:
        for row in results:
            f.write(json.dumps(row) + "\n")
    plot(OUT / "scale.json", OUT / "scale.png")
    print("| stage | dataset | tasks | runner | seconds | s/task | peak RSS MiB | warehouse KiB/task | load | rows equal |")
    print("|---|---|---:|---|---:|---:|---:|---:|---|---|")
    for r in results:
        print(f"| {r['stage']} | {r['dataset']} | {r['tasks']} | {r['runner']} | {r['seconds']} | "
              f"{r['seconds_per_task']} | {r['peak_rss_mib']} | {r['warehouse_kib_per_task']} | {r['load_before']}→{r['load_after']} | "
              f"{r.get('rows_equal', '-')} |")


def plot(data: Path, png: Path) -> None:
    """Seconds per task against tasks, one line per stage and runner (the latest run of each point)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    latest: dict[tuple, dict] = {}
    for line in data.read_text().splitlines():
        r = json.loads(line)
        latest[(r["stage"], r["dataset"], r["runner"], r["tasks"])] = r
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, key, label in ((axes[0], "seconds_per_task", "seconds per task"), (axes[1], "peak_rss_mib", "peak RSS (MiB)")):
        lines: dict[tuple, list] = {}
        for (stage, dataset, runner, tasks), r in sorted(latest.items(), key=lambda kv: kv[0][3]):
            lines.setdefault((stage, dataset, runner), []).append((tasks, r[key]))
        for (stage, dataset, runner), pts in sorted(lines.items()):
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{stage} {dataset} {runner}")
        ax.set_xlabel("tasks")
        ax.set_ylabel(label)
        ax.set_xscale("log")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=100)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    main()
