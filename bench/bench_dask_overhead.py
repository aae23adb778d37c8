"""Where a Dask run's time goes: one certify shard (the same few tasks, 1 sandbox slot) run here in this
process, on a `dask worker --no-nanny` process, on a `dask worker` process under its Nanny with
distributed's defaults, and under a Nanny with MALLOC_TRIM_THRESHOLD_ unset (what `--dask N`'s
LocalCluster starts), in turn, ``--rounds`` times; plain `distributed` (no Prefect).

    python3 bench/bench_dask_overhead.py --tasks 2 --rounds 2

Prints each shard's seconds (execute = round 0 + labels, repeat = re-runs from reset) and the load
average. The shard function is `acceptgate.pipelines.shards.certify_shard` with `--workers 1` settings, so the
four differ only in the process that runs it. Interleaved rounds, because on a shared machine the
load moves between runs.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SHARED = Path(os.environ.get("ACCEPTGATE_SHARED_DATA", REPO.parent / "shared" / "data"))
HEPLUS = SHARED / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz"
CODET = SHARED / "samples" / "codet_codegen16B.jsonl.gz"


def run_shard(shard, settings) -> tuple[float, dict]:
    from acceptgate.pipelines import shards
    started = time.monotonic()
    result = shards.certify_shard(shard, "local", settings)
    return time.monotonic() - started, result.seconds


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def on_worker(shard, settings, nanny: bool, workdir: Path, trim: bool = True) -> tuple[float, dict]:
    """``trim=False``: the Nanny's MALLOC_TRIM_THRESHOLD_ unset through a Dask config file (what
    flows/dask_runner.py does for its LocalCluster)."""
    import distributed

    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    if not trim:
        config = workdir / "dask-config"
        config.mkdir(exist_ok=True)
        (config / "nanny.yaml").write_text(
            "distributed:\n  nanny:\n    pre-spawn-environ:\n      MALLOC_TRIM_THRESHOLD_: null\n")
        env["DASK_CONFIG"] = str(config)
    sched = subprocess.Popen(["dask", "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
                             cwd=workdir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker = None
    try:
        worker = subprocess.Popen(["dask", "worker", f"tcp://127.0.0.1:{port}", "--nthreads", "1", "--no-dashboard",
                                   *([] if nanny else ["--no-nanny"])], cwd=workdir, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with distributed.Client(f"tcp://127.0.0.1:{port}", timeout=60) as client:
            client.wait_for_workers(1, timeout=120)
            return client.submit(run_shard, shard, settings, pure=False).result()
    finally:
        for proc in (worker, sched):
            if proc is not None:
                proc.terminate()
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()

    from acceptgate.pipelines import shards
    from acceptgate.v4v import certify as core
    from bench_scale import import_suites

    tmp = Path(tempfile.mkdtemp(prefix="bench_dask_overhead."))
    suites = tmp / "suites"
    import_suites("humanevalplus", HEPLUS, args.tasks, suites)
    materials = core.load_materials(str(suites), str(HEPLUS), str(CODET), limit=args.tasks)
    shard = shards.certify_shards(materials, args.tasks)[0]
    settings = core.Settings(workers=1)
    print("| round | where | shard seconds | execute | repeat | load before→after |")
    print("|---:|---|---:|---:|---:|---|")
    for i in range(1, args.rounds + 1):
        for where in ("this process", "dask worker --no-nanny", "dask worker (Nanny)",
                      "dask worker (Nanny, MALLOC_TRIM_THRESHOLD_ unset)"):
            load0 = os.getloadavg()[0]
            if where == "this process":
                seconds, stages = run_shard(shard, settings)
            else:
                seconds, stages = on_worker(shard, settings, "Nanny" in where, tmp, trim="unset" not in where)
            print(f"| {i} | {where} | {seconds:.1f} | {stages['execute']:.1f} | {stages['repeat']:.1f} | "
                  f"{load0:.1f}→{os.getloadavg()[0]:.1f} |", flush=True)


if __name__ == "__main__":
    main()
