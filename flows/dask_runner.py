"""Shards on Dask: one Prefect task run per shard, on Prefect's ``DaskTaskRunner`` (``prefect-dask``),
for every sharded stage (``acceptgate.shards``). Used from inside a flow run, so a flow takes a plain
``dask`` parameter (``N`` or ``tcp://host:port``; the CLI's ``--dask``, a deployment's parameter):

    results = dask_runner.map_shards(gate_tasks.gate_shard, batches, dask, arms=arms, ...)

Everything else of the flow -- loading inputs, the run ledger, every warehouse write -- stays in the
flow's own process: the cluster computes rows, the client writes them (one writer).

The Dask workers must reach the Prefect API (``PREFECT_API_URL`` in their environment): every shard is
a task run. A LocalCluster's workers inherit this process's environment.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Callable, Iterator

from acceptgate import shards


def task_runner(dask_workers: int | None = None, dask_address: str | None = None):
    """A DaskTaskRunner: on an existing scheduler, or a LocalCluster of single-threaded worker processes
    (the parallelism inside a shard is the sandbox's own processes)."""
    import dask
    from prefect_dask import DaskTaskRunner

    if dask_address:
        return DaskTaskRunner(address=dask_address)
    # A Nanny starts its worker with MALLOC_TRIM_THRESHOLD_=65536 (distributed's default): glibc then gives
    # memory back on almost every free, and a certify shard ran 1.5x slower on a quiet machine (2.5-3x
    # under load) than in this process; bench/bench_dask_overhead.py shows it. Unset for our workers.
    dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None})
    return DaskTaskRunner(cluster_kwargs={"n_workers": dask_workers or 2, "threads_per_worker": 1,
                                          "processes": True, "dashboard_address": None,
                                          "worker_class": _nanny_class(), "preload": [PRELOAD]})


# Imported by each LocalCluster worker as it starts (distributed's ``preload``), before any shard
# arrives: Prefect's task engine and the shard code, 4-5 s of imports here (after distributed's own) that a
# worker would otherwise pay inside its first shard, while the client waits.
PRELOAD = "acceptgate.flows.dask_preload"


_NANNY = None


def _nanny_class():
    """distributed's Nanny, except that a worker process that dies once a stop was requested (the
    stop kills every child: ``acceptgate.interrupt``) is not restarted: a fresh worker would outlive
    the scheduler that closes next and print distributed's heartbeat traceback."""
    global _NANNY
    if _NANNY is None:
        from distributed import Nanny

        from acceptgate import interrupt

        class StopAwareNanny(Nanny):
            async def _on_worker_exit(self, exitcode):
                if interrupt.requested():
                    return None
                return await super()._on_worker_exit(exitcode)

        _NANNY = StopAwareNanny
    return _NANNY


def map_shards(task, batches: list, dask: str, *, progress: Callable[[int, int], None] | None = None,
               **parameters) -> list:
    """Run ``task(shard=batch, **parameters)`` for every batch on the cluster ``dask`` names; the results
    in batch order. A shard that fails raises here, after the cluster is released (nothing merged)."""
    with cluster(dask) as run:
        return run(task, batches, progress=progress, **parameters)


@contextlib.contextmanager
def cluster(dask: str) -> Iterator[Callable[..., list]]:
    """The cluster held open for several maps (a stage that sends shards batch after batch):
    ``with cluster(dask) as run: run(task, batches, **parameters)``.

    The cluster starts in the background as the block is entered (a LocalCluster's workers spawn and
    import while the flow loads its inputs and records its run); the first ``run`` waits for it."""
    workers, address = shards.parse_dask(dask)
    runner = task_runner(workers, address)
    started: list[BaseException] = []
    entered: list[bool] = []

    def start() -> None:
        try:
            runner.__enter__()
            entered.append(True)
            if workers:  # a LocalCluster's workers register one by one: the first must not take every shard
                runner.client.wait_for_workers(workers)
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

    def run(task, batches: list, *, progress: Callable[[int, int], None] | None = None, **parameters) -> list:
        ready()
        futures = [runner.submit(task, parameters={"shard": batch, **parameters}) for batch in batches]
        results = []
        for done, future in enumerate(futures, 1):
            results.append(future.result())
            if progress:
                progress(done, len(futures))
        return results

    try:
        yield run
    finally:
        starter.join()
        if entered:
            runner.__exit__(None, None, None)
