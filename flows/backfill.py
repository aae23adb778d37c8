"""The ``backfill`` flow: retro-scan history (a date range, run ids, all arms; gate runs in the warehouse
and jsonl history files) for hidden-test material.

Resumable and idempotent: scans are committed in batches of whole runs, and a record whose inputs hash
matches its stored verdict is skipped, so an interrupted backfill continues where it stopped and a
repeated one writes nothing new. Run it with ``acceptgate backfill`` or the ``leak-backfill``
deployment (its parameters are the request's fields).
"""

from __future__ import annotations

import time

from prefect import flow
from prefect.utilities.annotations import quote

from acceptgate.pipelines import shards
from acceptgate.leak import audit as core
from acceptgate.pipelines import leak as leak_io
from acceptgate.pipelines.requests import LeakBackfillRequest
from acceptgate.pipelines import ledger
from acceptgate.flows import dask_runner
from acceptgate.tasks import leak_tasks as t
from acceptgate.tasks import run_tasks


@flow(name="leak-backfill", persist_result=False, log_prints=False)
def backfill(request: LeakBackfillRequest, progress=None, spooled=None) -> core.AuditResult:
    """``dask``: N (a LocalCluster) or a scheduler address: each batch's runs are scanned in record
    shards of about ``shard_size`` records (whole runs) there; every write stays here. ``progress`` and
    ``spooled``: the command's hooks, as for the leak audit."""
    started = time.monotonic()
    r = request
    selection = core.Selection(run_ids=tuple(r.run_ids) if r.run_ids else None,
                               since=core.parse_time(r.since, "since"), until=core.parse_time(r.until, "until"),
                               arms=tuple(r.arms) if r.arms else None, history=tuple(r.history),
                               warehouse_runs=r.include_warehouse)
    # the history files already read by the command's input check (read once), else read first
    spool = spooled if spooled is not None else run_tasks.pipeline_step(core.read_history, selection)
    try:
        path = run_tasks.pipeline_step(ledger.prepare, r.warehouse)
        load = time.monotonic()
        gate = run_tasks.pipeline_step(leak_io.load_records, path, selection, quote(spool))
        load = time.monotonic() - load
        material = time.monotonic()
        # only the tasks the selected records name: the material of every task costs ~0.1 s of CPU each
        materials = t.hidden_material(suites_dir=r.suites_dir, humanevalplus=r.humanevalplus, backend=r.backend,
                                      task_ids=core.task_ids(selection, gate, spool))
        material = time.monotonic() - material
        if r.dask:
            # the scan in this flow, not in a task: shards are submitted from the flow's own context
            # (a task run's context, with its parameters, cannot travel to a Dask worker)
            with dask_runner.cluster(r.dask) as run:
                def scan_many(runs):
                    return shards.merge_leak(run(shards.leak_shard, shards.leak_shards(runs, materials, r.matcher,
                                                                                    r.shard_size)))
                result = leak_io.run_audit(path, materials, selection, matcher=r.matcher, rescan=r.rescan,
                                           progress=progress, batch_records=r.batch_records, publish=False,
                                           history=spool, kind="leak-backfill", gate=gate,
                                           scan_many=scan_many)
        else:
            result = run_tasks.pipeline_step(leak_io.run_audit, path, quote(materials), selection, matcher=r.matcher,
                                             rescan=r.rescan, progress=quote(progress), batch_records=r.batch_records,
                                             publish=False, history=quote(spool), kind="leak-backfill",
                                             gate=quote(gate))
        return t.publish(path, quote(result), started=started, material=material, load=load)
    finally:
        if spool is not None:
            spool.close()  # the spool; run_audit closed it already unless a stage before failed
