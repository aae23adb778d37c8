"""The ``score-sharded`` flow: score a samples file in coarse shards, one Prefect task run per shard
(``score_shard``), on a Dask cluster through Prefect's ``DaskTaskRunner`` (``prefect-dask``).

    a LocalCluster on this machine:  run(..., dask="2")                 (acceptgate score --dask 2)
    an existing cluster:             run(..., dask=DaskCluster(address="tls://scheduler:8786", tls=...))
                                     (acceptgate score --dask tls://... --dask-tls-ca-file ... ...)

Both over mutual TLS (``acceptgate.pipelines.daskcluster``).

Every Dask worker runs its shards in its own sandbox backend, so each worker host needs the sandbox
prerequisites (docs/orchestration.md). Shards carry their samples and suites; nothing is read
from a path on the worker.
"""

from __future__ import annotations

import time

from prefect import flow

from acceptgate.pipelines import daskcluster, shards

from acceptgate.scoring import score
from acceptgate.pipelines.daskcluster import DaskCluster
from acceptgate.sandbox.backend import Limits
from acceptgate.tasks import run_tasks


@flow(name="score-sharded", persist_result=False, log_prints=False)
def score_sharded(suites_dir: str, samples: str, suite: str = "hidden", backend: str = "local",
                  limit: int | None = None, per_task: int | None = None,
                  shard_size: int = shards.DEFAULT_SHARD_SIZE, fail_fast: bool = True, workers_per_shard: int = 1,
                  limits: Limits = Limits(), strict: bool = False, profile: str = "default",
                  unusable: dict[str, str] | None = None) -> shards.ShardedScore:
    """``unusable``: task_id -> why its suite failed the gauge check (its samples are not run)."""
    started = time.monotonic()
    inputs = shards.load_inputs(suites_dir, samples, suite, limit=limit, per_task=per_task, profile=profile)
    # the same invalid-record rule as the single-process score (docs/gates.md: invalid records are counted, never drawn)
    sample_file, invalid_ids = score.check_records(inputs.sample_file, set(inputs.suites) | set(inputs.excluded),
                                                   inputs.prompts, set(inputs.suites), strict=strict)
    runnable = {t: spec for t, spec in inputs.suites.items() if t not in (unusable or {})}
    batches = shards.make_shards(sample_file, runnable, inputs.prompts, shard_size, inputs.timing)
    # the shard's whole work is ``shards.score_shard`` (also run in-process): each shard a run of the
    # generic step task, named after it, on the flow's task runner (Dask with ``run``)
    futures = [run_tasks.pipeline_step.submit(shards.score_shard, b, backend, suite=suite, fail_fast=fail_fast,
                                              workers=workers_per_shard, limits=limits, profile=profile)
               for b in batches]
    results = [f.result() for f in futures]
    shards.check_results(batches, results)  # the rows of each shard are its samples, before any merge
    merged = shards.merge(sample_file, inputs.suites, inputs.excluded, results, suite=suite,
                          fail_fast=fail_fast, wall_seconds=time.monotonic() - started, unusable=unusable,
                          prompts=inputs.prompts, profile=profile)
    merged.report.invalid_task_ids = invalid_ids
    return merged


def task_runner(dask: DaskCluster | str):
    """The sharded stages' DaskTaskRunner (flows/dask_runner.py; the parallelism inside a shard is the
    sandbox's own processes, ``workers_per_shard``)."""
    from acceptgate.flows import dask_runner

    return dask_runner.task_runner(daskcluster.parse(dask))


def run(suites_dir: str, samples: str, *, dask: DaskCluster | str, **kwargs) -> shards.ShardedScore:
    """The flow on a DaskTaskRunner: a LocalCluster (``dask`` = N) or an existing TLS cluster."""
    import contextlib
    import os

    from acceptgate.flows import serve

    with contextlib.ExitStack() as stack:
        if not os.environ.get("PREFECT_API_URL"):
            # Prefect's temporary server would be known to this process only: the Dask workers, started
            # as fresh processes, would each start their own. A local server in the environment they
            # inherit is one server for all (stopped on exit).
            os.environ["PREFECT_API_URL"] = stack.enter_context(serve.local_server(_free_port()))
            stack.callback(os.environ.pop, "PREFECT_API_URL", None)
        runner = task_runner(dask)
        return score_sharded.with_options(task_runner=runner)(suites_dir, samples, **kwargs)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
