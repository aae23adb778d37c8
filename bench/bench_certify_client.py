"""Where a sharded certify's client spends its time: the certify command run in this process (first
``--tasks`` HumanEval+ tasks, CodeT samples, ``--no-gauge``, 1 sandbox slot per worker) on a Dask
LocalCluster, with each client phase's wall seconds and this thread's CPU seconds logged.

    python3 bench/bench_certify_client.py --tasks 10 --dask 1 --shard-size 2

The phases: loading the materials, the run's start (its row validated: Great Expectations is imported
there), the shards on the cluster (its start included), the merge, the frames, each stage's
validation and write (``validate_batch`` runs inside ``start`` and ``write_stage``: its
seconds are part of theirs), the finish (publish). CPU seconds are the robust figure on a shared machine;
the load average is printed beside them. The part of the wall time outside the shards is what does
not spread over workers. Prints one JSON object (and appends it to bench/out/certify_client.json).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SHARED = Path(os.environ.get("ACCEPTGATE_SHARED_DATA", REPO.parent / "shared" / "data"))
HEPLUS = SHARED / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz"
CODET = SHARED / "samples" / "codet_codegen16B.jsonl.gz"


def timed(log: list[dict], started: float, module, name: str) -> None:
    """Replace ``module.name`` by a wrapper that logs its wall and this thread's CPU seconds."""
    fn = getattr(module, name)

    def wrapper(*args, **kwargs):
        w0, c0 = time.perf_counter(), time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            log.append({"phase": name, "start": round(w0 - started, 1), "wall": round(time.perf_counter() - w0, 2),
                        "cpu": round(time.thread_time() - c0, 2)})

    setattr(module, name, wrapper)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=10)
    ap.add_argument("--dask", default="1", help="N worker processes, or a scheduler address")
    ap.add_argument("--shard-size", type=int, default=2)
    args = ap.parse_args()

    from acceptgate.tasks import _prefect_env  # noqa: F401  (offline settings before prefect is imported)
    from acceptgate.flows import serve
    from bench_scale import free_port, import_suites

    tmp = Path(tempfile.mkdtemp(prefix="bench_certify_client."))
    suites = tmp / "suites"
    import_suites("humanevalplus", HEPLUS, args.tasks, suites)
    with serve.local_server(free_port()) as api:
        os.environ["PREFECT_API_URL"] = api
        log: list[dict] = []
        from acceptgate.pipelines import shards
        from acceptgate.store import expectations
        from acceptgate.cli import main as cli
        from acceptgate.pipelines import ledger
        from acceptgate.v4v import certify as core
        from acceptgate.v4v import store
        import acceptgate.flows.certify  # noqa: F401
        from acceptgate.flows import dask_runner

        t0 = time.perf_counter()
        for module, name in ((core, "load_materials"), (ledger.Family, "start"), (dask_runner, "map_shards"),
                             (shards, "merge_certify"), (store, "pool_frames"), (store, "certification_frames"),
                             (expectations, "validate_batch"), (ledger.Run, "write_stage"),
                             (ledger.Run, "finish")):
            timed(log, t0, module, name)
        c0, load0 = time.process_time(), os.getloadavg()[0]
        rc = cli(["certify", "--suites", str(suites), "--dataset", str(HEPLUS), "--samples", str(CODET), "--limit",
                  str(args.tasks), "--warehouse", str(tmp / "w.duckdb"), "--no-gauge", "--workers", "1",
                  "--dask", args.dask, "--shard-size", str(args.shard_size)])
        wall = time.perf_counter() - t0
    phases: dict[str, list[float]] = {}
    for p in log:
        total = phases.setdefault(p["phase"], [0.0, 0.0])
        total[0] += p["wall"]
        total[1] += p["cpu"]
    shards_wall = phases.get("map_shards", [0.0])[0]
    out = {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "tasks": args.tasks, "dask": args.dask,
           "shard_size": args.shard_size, "rc": rc, "wall": round(wall, 1),
           "outside_shards_wall": round(wall - shards_wall, 1), "client_process_cpu": round(time.process_time() - c0, 1),
           "load": [round(load0, 1), round(os.getloadavg()[0], 1)],
           "phases": {k: {"wall": round(w, 1), "cpu": round(c, 2)} for k, (w, c) in phases.items()}}
    print(json.dumps(out, indent=1))
    (REPO / "bench" / "out").mkdir(parents=True, exist_ok=True)
    with open(REPO / "bench" / "out" / "certify_client.json", "a") as f:
        f.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
