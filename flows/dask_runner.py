"""Shards on Dask: one Prefect task run per shard, on Prefect's ``DaskTaskRunner`` (``prefect-dask``),
for every sharded stage (``acceptgate.pipelines.shards``). Used from inside a flow run, so a flow takes a plain
``dask`` parameter (``N``, a ``tls://host:port`` cluster with its credentials: an
``acceptgate.pipelines.daskcluster.DaskCluster``; the CLI's ``--dask`` and ``--dask-tls-*``):

    results = dask_runner.map_shards(shards.gate_shard, batches, dask, arms=arms, ...)

Everything else of the flow -- loading inputs, the run ledger, every warehouse write -- stays in the
flow's own process: the cluster computes rows, the client writes them (one writer).

Every cluster authenticates with mutual TLS (``acceptgate.pipelines.daskcluster``): a LocalCluster on loopback
under a CA made for it in memory, an existing one with the client certificate the operator gives.

The Dask workers must reach the Prefect API (``PREFECT_API_URL`` in their environment): every shard is
a task run. A LocalCluster's workers inherit this process's environment.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Callable, Iterator

from acceptgate.pipelines import daskcluster, shards
from acceptgate.pipelines.daskcluster import DaskCluster
from acceptgate.tasks import run_tasks

LOOPBACK = "127.0.0.1"


def security(cluster: DaskCluster):
    """distributed's Security for ``cluster``: encryption required, and a certificate on both sides."""
    from distributed.security import Security

    if cluster.tls is None:  # a LocalCluster: a CA and certificate of its own, in memory, for this run only
        return Security.temporary()
    return Security(require_encryption=True, tls_ca_file=cluster.tls.ca_file, tls_client_cert=cluster.tls.cert,
                    tls_client_key=cluster.tls.key)


# Every Dask node serves HTTP pages (worker lists, task pages, logs, call stacks, metrics) with no
# authentication, dashboard or not: ours serve the health check only.
HTTP_HEALTH_ONLY = {"distributed.scheduler.http.routes": ["distributed.http.health"],
                    "distributed.worker.http.routes": ["distributed.http.health"]}


def task_runner(cluster: DaskCluster):
    """A DaskTaskRunner: on an existing scheduler, or a LocalCluster of single-threaded worker processes
    (the parallelism inside a shard is the sandbox's own processes) on loopback, both over mutual TLS."""
    import dask
    from prefect_dask import DaskTaskRunner

    secure = security(cluster)
    if cluster.address:
        return DaskTaskRunner(address=cluster.address, client_kwargs={"security": secure})
    # A Nanny starts its worker with MALLOC_TRIM_THRESHOLD_=65536 (distributed's default): glibc then gives
    # memory back on almost every free, and a certify shard ran 1.5x slower on a quiet machine (2.5-3x
    # under load) than in this process; bench/bench_dask_overhead.py shows it. Unset for our workers.
    dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None, **HTTP_HEALTH_ONLY})
    return DaskTaskRunner(cluster_kwargs={"n_workers": cluster.workers, "threads_per_worker": 1,
                                          "processes": True, "dashboard_address": None,
                                          "host": LOOPBACK, "protocol": "tls://", "security": secure,
                                          "worker_class": _nanny_class(), "preload": [PRELOAD]},
                          client_kwargs={"security": secure})


# Imported by each LocalCluster worker as it starts (distributed's ``preload``), before any shard
# arrives: Prefect's task engine and the shard code, 4-5 s of imports here (after distributed's own) that a
# worker would otherwise pay inside its first shard, while the client waits.
PRELOAD = "acceptgate.flows.dask_preload"


_NANNY = None


def _nanny_class():
    """distributed's Nanny, except that a worker process that dies once a stop was requested (the
    stop kills every child: ``acceptgate._util.interrupt``) is not restarted: a fresh worker would outlive
    the scheduler that closes next and print distributed's heartbeat traceback."""
    global _NANNY
    if _NANNY is None:
        from distributed import Nanny

        from acceptgate._util import interrupt
        class StopAwareNanny(Nanny):
            async def _on_worker_exit(self, exitcode):
                if interrupt.requested():
                    return None
                return await super()._on_worker_exit(exitcode)

        _NANNY = StopAwareNanny
    return _NANNY


def map_shards(step: Callable[..., object], batches: list, dask: DaskCluster | str, *,
               progress: Callable[[int, int], None] | None = None, **parameters) -> list:
    """Run ``step(batch, **parameters)`` (a shard function of ``acceptgate.pipelines.shards``) for every
    batch on the cluster ``dask`` names; the results in batch order. A shard that fails raises here, after
    the cluster is released (nothing merged)."""
    with cluster(dask) as run:
        return run(step, batches, progress=progress, **parameters)


@contextlib.contextmanager
def cluster(dask: DaskCluster | str) -> Iterator[Callable[..., list]]:
    """The cluster held open for several maps (a stage that sends shards batch after batch):
    ``with cluster(dask) as run: run(shards.leak_shard, batches, **parameters)``.

    The cluster starts in the background as the block is entered (a LocalCluster's workers spawn and
    import while the flow loads its inputs and records its run); the first ``run`` waits for it."""
    spec = daskcluster.parse(dask)
    runner = task_runner(spec)
    started: list[BaseException] = []
    entered: list[bool] = []

    def start() -> None:
        try:
            runner.__enter__()
            entered.append(True)
            if spec.workers:  # a LocalCluster's workers register one by one: the first must not take every shard
                runner.client.wait_for_workers(spec.workers)
            else:
                runner.client  # noqa: B018  (connects to the scheduler)
        except BaseException as exc:  # raised where the cluster is used
            started.append(exc)

    starter = threading.Thread(target=start, name="acceptgate-dask-start", daemon=True)
    starter.start()

    def ready() -> None:
        starter.join()
        if started:
            raise started[0]

    def run(step: Callable[..., object], batches: list, *, progress: Callable[[int, int], None] | None = None,
            **parameters) -> list:
        ready()
        # A shard function already does its shard's whole work (open the backend, run, collect rows) and
        # runs in-process too (tests, benchmarks): each shard is a run of the generic step task, named
        # after the function (one name per shard kind: gate_shard, certify_shard, ...).
        futures = [runner.submit(run_tasks.pipeline_step,
                                 parameters={"step": step, "args": (batch,), "kwargs": parameters})
                   for batch in batches]
        results = []
        for done, future in enumerate(futures, 1):
            results.append(future.result())
            if progress:
                progress(done, len(futures))
        shards.check_results(batches, results)  # a result that does not answer its shard is never merged
        return results

    try:
        yield run
    finally:
        starter.join()
        if entered:
            runner.__exit__(None, None, None)
