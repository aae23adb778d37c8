"""The ``gate`` flow: tasks -> one gate per arm -> write decisions/attempts/messages -> score the
delivered programs on GT (under the scoring profile, ``acceptgate.scoring.profiles``) -> write deliveries ->
per-arm summary. Run it with ``acceptgate gate``.

The flow only sequences the tasks; every stage validates its rows (Great Expectations) before it
writes them, so a failed expectation stops the flow with nothing of that stage written.
"""

from __future__ import annotations

import time

from prefect import flow
from prefect.utilities.annotations import quote

from acceptgate.pipelines import shards
from acceptgate._util.phases import Phases, tenths
from acceptgate.gates import run as core
from acceptgate.pipelines.requests import GateRequest
from acceptgate.flows import dask_runner
from acceptgate.pipelines.families import GATE
from acceptgate.pipelines import ledger
from acceptgate.tasks import gate_tasks as t
from acceptgate.tasks import run_tasks


@flow(name="gate", persist_result=False, log_prints=False)
def gate(request: GateRequest, progress=None) -> core.GateSummary:
    """The tasks: a data set (``dataset``, its file ``dataset_path``; ``humanevalplus=FILE`` is
    ``dataset="humanevalplus"`` with that file) imported now, or ``suites_dir``.
    ``certify``: gate only tasks with a certification record for their exact suites and pool in
    ``warehouse`` (none: exit 2 naming the task; a failed one: the task is excluded with its reason);
    False (``--no-certify``) skips it, stored in gate_runs and with every decision.
    ``max_fpr_attack``: the arms that decide with V refuse a task whose V accepts more than this share
    (%) of the attacks on its certified pool (None: no limit).
    ``gauge``: use only suites with a passing gauge record (computed and stored when missing; a task
    with a failing one is excluded, with its reason); False (``--no-gauge``) skips the check.
    ``progress``: an optional callable taking one line of text (the CLI prints it on stderr; not part of
    the request).
    ``dask``: N (a LocalCluster of N workers) or a scheduler address: the tasks are gated in shards of
    ``shard_size`` tasks on the cluster (every arm and the deliveries' GT runs of a task in its shard);
    the rows are the single-process ones and are written here, through the run ledger. The run id is
    the same as single-process (it derives from the inputs; where the work ran is not an input)."""
    started = time.monotonic()
    r = request
    arms = core.check_arms(r.arms)
    say = progress or (lambda text: None)
    say("loading tasks")
    # Inputs first: a run refused for its inputs (exit 2) must not leave even a schema-only warehouse.
    timed = Phases()  # where the run's time went (--verbose)
    tasks, tasks_from, coverage, admitted, spent = t.load_tasks(
        backend=r.backend, humanevalplus=r.humanevalplus, suites_dir=r.suites_dir, limit=r.limit, source=r.source,
        per_task=r.per_task, chat_config=r.chat_config, strict=r.strict, gauge=r.gauge, dataset=r.dataset,
        dataset_path=r.dataset_path, certify=r.certify, warehouse=r.warehouse, max_fpr_attack=r.max_fpr_attack,
        loading=quote(tenths(say, "loading tasks")), gauging=quote(tenths(say, "gauge check")), say=quote(say))
    for phase, wall in spent.items():
        timed.add(phase, wall)
    core.check_profile(r.profile, tasks)  # GT's scoring profile: refused here, before any gate runs
    say(f"{len(tasks)} tasks from {tasks_from}" + (f" ({len(admitted.exclusions)} excluded)" if admitted.exclusions
                                                   else ""))
    with timed("write"):
        path = run_tasks.pipeline_step(ledger.prepare, r.warehouse)
        digest = core.tasks_sha256(tasks)
        run_id, origin = r.name_run(digest)
        run = core.make_run(source=r.source, tasks=tasks, tasks_from=tasks_from, arms=arms, per_task=r.per_task,
                            backend=r.backend, run_id=run_id, run_id_origin=origin, digest=digest,
                            gauge=core.GAUGE_CHECKED if r.gauge else core.GAUGE_SKIPPED,
                            certify=core.CERTIFY_CHECKED if r.certify else core.CERTIFY_SKIPPED,
                            max_fpr_attack=r.max_fpr_attack if r.certify else None,
                            exclusions=tuple(admitted.exclusions))
        # the attempt is recorded; any error or stop below ends it
        ledger_run = run_tasks.start_run(GATE, path, run.run_id, run.frame())
    outcomes, seconds = [], {}
    # quote(): tasks hold ~10^5 nested cases and outcomes every message; without it Prefect walks each one
    with ledger_run.guard():
        if r.dask:
            with timed("execute"):
                outcomes, rows, seconds = _gate_on_dask(tasks, arms, r, say, admitted)
            with timed("write"):
                gate_write = t.write_gate_stage(path, run, quote(outcomes))
                delivery_write = t.write_deliveries(path, run, quote(outcomes), quote(rows))
        else:
            with timed("execute"):
                for arm in arms:
                    say(f"arm {arm}: gating {len(tasks)} tasks")
                    arm_outcomes, seconds[arm] = t.gate_arm(
                        arm, quote(tasks), source=r.source, backend=r.backend, per_task=r.per_task,
                        chat_config=r.chat_config, workers=r.workers, limits=r.limits, strict=r.strict,
                        progress=quote(tenths(say, f"arm {arm}")), admitted=quote(admitted))
                    outcomes += arm_outcomes
            with timed("write"):
                gate_write = t.write_gate_stage(path, run, quote(outcomes))
            say("scoring the delivered programs on the hidden suites")
            scoring = time.monotonic()
            rows, delivery_write, seconds["deliveries"] = t.score_deliveries(
                path, run, quote(tasks), quote(outcomes), backend=r.backend, workers=r.workers, limits=r.limits,
                profile=r.profile, progress=quote(tenths(say, "deliveries")))
            timed.add("execute", seconds["deliveries"])  # the task's scoring; its rows' write is the rest
            timed.add("write", time.monotonic() - scoring - seconds["deliveries"])
    with timed("write"):
        snapshot = run_tasks.finish_run(ledger_run, time.monotonic() - started)  # publishes the run
    return core.GateSummary(run, core.summarize_rows(run, rows), core.fpr_h_by_arm(run, outcomes), seconds,
                            [gate_write, delivery_write], str(path), coverage, str(snapshot),
                            timing=timed.line("gate"))


def _gate_on_dask(tasks, arms, r: GateRequest, say, admitted):
    """Shards of tasks on the cluster; each carries its tasks and the source's candidates for them."""
    from acceptgate.sources import open_source

    with open_source(r.source, per_task=r.per_task, chat_config=r.chat_config, strict=r.strict) as src:
        batches = shards.gate_shards(tasks, src, r.shard_size)
    say(f"gating {len(tasks)} tasks in {len(batches)} shards on Dask ({r.dask}), arms {', '.join(arms)}")
    results = dask_runner.map_shards(shards.gate_shard, batches, r.dask, progress=tenths(say, "gate shards"),
                                     arms=arms, backend=r.backend, source_spec=r.source, per_task=r.per_task,
                                     chat_config=r.chat_config, strict=r.strict, workers=r.workers,
                                     limits=r.limits, profile=r.profile, refusals=admitted.refusals)
    outcomes, rows, seconds, by_worker = shards.merge_gate(arms, results)
    admitted.stamp(outcomes)
    say("shards per worker: " + ", ".join(f"{w} {n} tasks" for w, n in sorted(by_worker.items())))
    return outcomes, rows, seconds
