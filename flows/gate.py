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
from acceptgate.sandbox.backend import Limits
from acceptgate.pipelines.daskcluster import DaskCluster
from acceptgate.flows import dask_runner
from acceptgate.pipelines.families import GATE
from acceptgate.tasks import gate_tasks as t
from acceptgate.tasks import run_tasks


@flow(name="gate", persist_result=False, log_prints=False)
def gate(arms: list[str], source: str, humanevalplus: str | None = None, suites_dir: str | None = None,
         warehouse: str | None = None, backend: str = "local", run_id: str | None = None, per_task: int = 5,
         limit: int | None = None, workers: int = 2, chat_config=None,
         limits: Limits = Limits(), strict: bool = False, profile: str = "default",
         gauge: bool = True, progress=None, dask: DaskCluster | str | None = None,
         shard_size: int = shards.DEFAULT_TASKS_PER_SHARD, dataset: str | None = None,
         dataset_path: str | None = None, certify: bool = True,
         max_fpr_attack: float | None = core.DEFAULT_MAX_FPR_ATTACK) -> core.GateSummary:
    """The tasks: a data set (``dataset``, its file ``dataset_path``; ``humanevalplus=FILE`` is
    ``dataset="humanevalplus"`` with that file) imported now, or ``suites_dir``.
    ``certify``: gate only tasks with a certification record for their exact suites and pool in
    ``warehouse`` (none: exit 2 naming the task; a failed one: the task is excluded with its reason);
    False (``--no-certify``) skips it, stored in gate_runs and with every decision.
    ``max_fpr_attack``: the arms that decide with V refuse a task whose V accepts more than this share
    (%) of the attacks on its certified pool (None: no limit).
    ``gauge``: use only suites with a passing gauge record (computed and stored when missing; a task
    with a failing one is excluded, with its reason); False (``--no-gauge``) skips the check.
    ``progress``: an optional callable taking one line of text (the CLI prints it on stderr).
    ``dask``: N (a LocalCluster of N workers) or a scheduler address: the tasks are gated in shards of
    ``shard_size`` tasks on the cluster (every arm and the deliveries' GT runs of a task in its shard);
    the rows are the single-process ones and are written here, through the run ledger. The run id is
    the same as single-process (it derives from the inputs; where the work ran is not an input)."""
    started = time.monotonic()
    arms = core.check_arms(arms)
    say = progress or (lambda text: None)
    say("loading tasks")
    # Inputs first: a run refused for its inputs (exit 2) must not leave even a schema-only warehouse.
    timed = Phases()  # where the run's time went (--verbose)
    tasks, tasks_from, coverage, admitted, spent = t.load_tasks(
        backend, humanevalplus, suites_dir, limit, source, per_task, chat_config, strict, gauge, dataset,
        dataset_path, certify, warehouse, max_fpr_attack, quote(tenths(say, "loading tasks")),
        quote(tenths(say, "gauge check")), quote(say))
    for phase, wall in spent.items():
        timed.add(phase, wall)
    core.check_profile(profile, tasks)  # GT's scoring profile: refused here, before any gate runs
    say(f"{len(tasks)} tasks from {tasks_from}" + (f" ({len(admitted.exclusions)} excluded)" if admitted.exclusions
                                                   else ""))
    with timed("write"):
        path = t.prepare_warehouse(warehouse)
        run = core.make_run(source=source, tasks=tasks, tasks_from=tasks_from, arms=arms, per_task=per_task,
                            backend=backend, run_id=run_id,
                            gauge=core.GAUGE_CHECKED if gauge else core.GAUGE_SKIPPED,
                            certify=core.CERTIFY_CHECKED if certify else core.CERTIFY_SKIPPED,
                            max_fpr_attack=max_fpr_attack if certify else None,
                            exclusions=tuple(admitted.exclusions))
        # the attempt is recorded; any error or stop below ends it
        ledger_run = run_tasks.start_run(GATE, path, run.run_id, run.frame())
    outcomes, seconds = [], {}
    # quote(): tasks hold ~10^5 nested cases and outcomes every message; without it Prefect walks each one
    with ledger_run.guard():
        if dask:
            with timed("execute"):
                outcomes, rows, seconds = _gate_on_dask(tasks, arms, source, backend, per_task, chat_config, workers,
                                                        limits, strict, profile, dask, shard_size, say, admitted)
            with timed("write"):
                gate_write = t.write_gate_stage(path, run, quote(outcomes))
                delivery_write = t.write_deliveries(path, run, quote(outcomes), quote(rows))
        else:
            with timed("execute"):
                for arm in arms:
                    say(f"arm {arm}: gating {len(tasks)} tasks")
                    arm_outcomes, seconds[arm] = t.gate_arm(arm, quote(tasks), source, backend, per_task,
                                                            chat_config, workers, limits, strict,
                                                            quote(tenths(say, f"arm {arm}")), quote(admitted))
                    outcomes += arm_outcomes
            with timed("write"):
                gate_write = t.write_gate_stage(path, run, quote(outcomes))
            say("scoring the delivered programs on the hidden suites")
            scoring = time.monotonic()
            rows, delivery_write, seconds["deliveries"] = t.score_deliveries(path, run, quote(tasks), quote(outcomes),
                                                                             backend, workers, limits, profile,
                                                                             quote(tenths(say, "deliveries")))
            timed.add("execute", seconds["deliveries"])  # the task's scoring; its rows' write is the rest
            timed.add("write", time.monotonic() - scoring - seconds["deliveries"])
    with timed("write"):
        snapshot = run_tasks.finish_run(ledger_run, time.monotonic() - started)  # publishes the run
    return core.GateSummary(run, core.summarize_rows(run, rows), core.fpr_h_by_arm(run, outcomes), seconds,
                            [gate_write, delivery_write], str(path), coverage, str(snapshot),
                            timing=timed.line("gate"))


def _gate_on_dask(tasks, arms, source, backend, per_task, chat_config, workers, limits, strict, profile, dask,
                  shard_size, say, admitted):
    """Shards of tasks on the cluster; each carries its tasks and the source's candidates for them."""
    from acceptgate.sources import open_source

    with open_source(source, per_task=per_task, chat_config=chat_config, strict=strict) as src:
        batches = shards.gate_shards(tasks, src, shard_size)
    say(f"gating {len(tasks)} tasks in {len(batches)} shards on Dask ({dask}), arms {', '.join(arms)}")
    results = dask_runner.map_shards(t.gate_shard, batches, dask, progress=tenths(say, "gate shards"),
                                     arms=arms, backend=backend, source_spec=source, per_task=per_task,
                                     chat_config=chat_config,
                                     strict=strict, workers=workers, limits=limits, profile=profile,
                                     refusals=admitted.refusals)
    outcomes, rows, seconds, by_worker = shards.merge_gate(arms, results)
    admitted.stamp(outcomes)
    say("shards per worker: " + ", ".join(f"{w} {n} tasks" for w, n in sorted(by_worker.items())))
    return outcomes, rows, seconds
