"""Samples/s of the sharded scorer on a Dask LocalCluster of 1 and of 2 worker processes (Prefect's
DaskTaskRunner), against the single-process scorer, on the same samples. Verdicts must agree.

    python3 bench/bench_dask.py [--tasks 20] [--per-task 20] [--shard-size 50]

Samples: the first PER_TASK CodeT CodeGen-16B samples of the first TASKS HumanEval+ tasks, scored on their
hidden (base + plus) suites. One sandbox process per Dask worker at a time (workers_per_shard = 1), so
2 workers is 2 sandboxes in parallel; the single-process row uses 1 and 2 sandbox threads for reference.
Wall times include the Dask cluster's start (not Prefect's server start: the bench starts one server first).
Report the machine's load beside the figures: on a shared 2-core machine they move with it.
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=20)
    ap.add_argument("--per-task", type=int, default=20)
    ap.add_argument("--shard-size", type=int, default=50)
    args = ap.parse_args()

    from acceptgate.tasks import _prefect_env  # noqa: F401
    from acceptgate.scoring import score
    from acceptgate.pipelines import shards
    from acceptgate.datasets import suitefiles
    from acceptgate.datasets.importers import humanevalplus
    from acceptgate.sandbox import backend as backends
    from acceptgate.sources.codet import evalplus_lines
    from acceptgate.flows import score_sharded, serve

    tmp = Path(tempfile.mkdtemp(prefix="bench_dask."))
    with backends.create("local") as b:
        imported = humanevalplus.load(SHARED / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz", b, limit=args.tasks)
    suites_dir = str(suitefiles.write_suites(imported, tmp / "suites"))
    lines = [x for x in evalplus_lines(SHARED / "samples" / "codet_codegen16B.jsonl.gz", args.per_task)
             if x["task_id"] in {t.task_id for t in imported.tasks}]
    samples = tmp / "samples.jsonl"
    samples.write_text("".join(json.dumps(x) + "\n" for x in lines))
    loaded = shards.load_inputs(suites_dir, str(samples), "hidden")

    rows = []
    for threads in (1, 2):
        load0 = os.getloadavg()[0]
        with backends.create("local") as b:
            t = time.monotonic()
            single = score.score_samples(loaded.sample_file, loaded.suites, loaded.prompts, b, suite="hidden",
                                         excluded=loaded.excluded, workers=threads)
            secs = time.monotonic() - t
        rows.append((f"single process, {threads} sandbox thread(s)", len(single.rows), secs, load0, os.getloadavg()[0], "-"))
    verdicts = [r.verdict for r in single.rows]
    with serve.local_server(serve_port()) as api:
        os.environ["PREFECT_API_URL"] = api
        for workers in (1, 2):
            load0 = os.getloadavg()[0]
            t = time.monotonic()
            sharded = score_sharded.run(suites_dir, str(samples), suite="hidden", dask=str(workers),
                                        shard_size=args.shard_size)
            secs = time.monotonic() - t
            agree = sum(a.verdict == b for a, b in zip(sharded.report.rows, verdicts))
            rows.append((f"Dask LocalCluster, {workers} worker(s)", len(sharded.report.rows), secs, load0,
                         os.getloadavg()[0], f"{agree}/{len(verdicts)}"))
    print(f"{args.tasks} tasks x {args.per_task} samples, hidden suites, shard size {args.shard_size}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores")
    print("| runner | samples | seconds | samples/s | load avg | verdicts agree with single process |")
    print("|---|---:|---:|---:|---|---|")
    for name, n, secs, l0, l1, agree in rows:
        print(f"| {name} | {n} | {secs:.1f} | {n / secs:.1f} | {l0:.1f}→{l1:.1f} | {agree} |")


def serve_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    main()
