"""The ``backfill`` flow: retro-scan history (a date range, run ids, all arms; gate runs in the warehouse
and jsonl history files) for hidden-test material.

Resumable and idempotent: scans are committed in batches of whole runs, and a record whose inputs hash
matches its stored verdict is skipped, so an interrupted backfill continues where it stopped and a
repeated one writes nothing new. Run it with ``acceptgate backfill`` or the ``leak-backfill``
deployment (its parameters are this function's).
"""

from __future__ import annotations

import time

from prefect import flow
from prefect.utilities.annotations import quote

from acceptgate.pipelines import shards
from acceptgate.leak import audit as core
from acceptgate.leak.matcher import DEFAULT
from acceptgate.pipelines import leak as leak_io
from acceptgate.pipelines.daskcluster import DaskCluster
from acceptgate.flows import dask_runner
from acceptgate.tasks import leak_tasks as t


@flow(name="leak-backfill", persist_result=False, log_prints=False)
def backfill(suites_dir: str | None = None, humanevalplus: str | None = None, warehouse: str | None = None,
             since: str | None = None, until: str | None = None, run_ids: list[str] | None = None,
             arms: list[str] | None = None, history: list[str] | None = None, include_warehouse: bool = True,
             matcher: str = DEFAULT, rescan: bool = False, batch_records: int = core.BATCH_RECORDS,
             backend: str = "local", progress=None, spooled=None, dask: DaskCluster | str | None = None,
             shard_size: int = shards.DEFAULT_RECORDS_PER_SHARD) -> core.AuditResult:
    """``dask``: N (a LocalCluster) or a scheduler address: each batch's runs are scanned in record
    shards of about ``shard_size`` records (whole runs) there; every write stays here."""
    started = time.monotonic()
    selection = core.Selection(run_ids=tuple(run_ids) if run_ids else None, since=core.parse_time(since, "since"),
                               until=core.parse_time(until, "until"), arms=tuple(arms) if arms else None,
                               history=tuple(history or ()), warehouse_runs=include_warehouse)
    # the history files already read by the command's input check (read once), else read first
    spool = spooled if spooled is not None else t.read_history(selection)
    try:
        path = t.prepare_warehouse(warehouse)
        material = time.monotonic()
        materials = t.hidden_material(suites_dir, humanevalplus, backend)
        material = time.monotonic() - material
        if dask:
            # the scan in this flow, not in a task: shards are submitted from the flow's own context
            # (a task run's context, with its parameters, cannot travel to a Dask worker)
            with dask_runner.cluster(dask) as run:
                def scan_many(runs):
                    return shards.merge_leak(run(t.leak_shard, shards.leak_shards(runs, materials, matcher,
                                                                                    shard_size)))
                result = leak_io.run_audit(path, materials, selection, matcher=matcher, rescan=rescan,
                                        progress=progress, batch_records=batch_records, publish=False,
                                        history=spool, kind="leak-backfill", scan_many=scan_many)
        else:
            result = t.scan(path, quote(materials), selection, matcher, rescan, batch_records,
                            quote(progress), quote(spool), kind="leak-backfill")
        publish = time.monotonic()
        result = t.publish(path, quote(result))
        return leak_io.with_flow_times(result, started=started, material=material, publish=time.monotonic() - publish)
    finally:
        if spool is not None:
            spool.close()  # the spool; run_audit closed it already unless a stage before failed
