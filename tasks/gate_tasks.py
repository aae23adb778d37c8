"""Prefect tasks of the gate flow: thin calls into ``acceptgate.gates`` and ``acceptgate.gates.delivery``.

One task per stage and one per arm (the work inside runs in parallel sandbox processes or HTTP
calls already). No caching, no persisted results: the warehouse is the record. Sources and sandbox
backends are opened inside each task by name, since they hold processes and connections.
"""

from __future__ import annotations

import time
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from acceptgate.gates import delivery

from acceptgate.scoring import gauge as gauges
from acceptgate.gates import HmixCaps, arm_tasks, run_arm
from acceptgate.gates import run as core
from acceptgate.gates.records import GateOutcome
from acceptgate.pipelines import admission
from acceptgate.pipelines.families import GATE
from acceptgate.pipelines.admission import Admission
from acceptgate.pipelines.ledger import StageWrite
from acceptgate.sandbox import backend as backends
from acceptgate.sandbox.backend import Limits
from acceptgate.sources import open_source
from acceptgate.datasets.task import Task

_STAGE = {"cache_policy": NO_CACHE, "persist_result": False}


@task(name="load-tasks", **_STAGE)
def load_tasks(backend: str, humanevalplus: str | None, suites_dir: str | None, limit: int | None,
               source: str, per_task: int, chat_config, strict: bool,
               gauge: bool = True, dataset: str | None = None, dataset_path: str | None = None,
               certify: bool = True, warehouse: str | None = None, max_fpr_attack: float | None = None,
               loading=None, gauging=None,
               say=None) -> tuple[list[Task], str, core.SourceCoverage, Admission, dict[str, float]]:
    """The tasks to gate: those the source has candidates for (the others are named, not refused),
    each with a certification record for its suites and pool unless ``certify`` is off (none: exit 2;
    a failed one excludes the task), each suite with a passing gauge record unless ``gauge`` is off (a
    failing one excludes the task, with its reason); ``Admission.refusals``: the tasks whose measured V
    is too weak for the policy. Also the seconds spent loading and admitting them. ``loading`` /
    ``gauging``: done/total callables for the import and the gauge check; ``say`` a phase line."""
    say = say or (lambda text: None)
    spent = {}
    with backends.create(backend) as sandbox:
        started = time.monotonic()
        loaded = core.load_task_set(backend=sandbox, humanevalplus=humanevalplus, suites_dir=suites_dir,
                                    limit=limit, dataset=dataset, path=dataset_path, progress=loading)
        say(f"reading the candidates of {source} for {len(loaded.tasks)} tasks")
        with open_source(source, per_task=per_task, chat_config=chat_config, strict=strict) as src:
            coverage = core.source_coverage(src, source, loaded.tasks, loaded.known, strict=strict)
        spent["load"] = time.monotonic() - started
        started = time.monotonic()
        covered = core.covered(loaded.tasks, coverage)
        if gauge:
            say(f"gauge check of the suites of {len(covered)} tasks (recorded ones are reused)")
        admitted = admission.admit(covered, sandbox, warehouse=warehouse,
                                   certify=certify, gauge=gauge, max_fpr_attack=max_fpr_attack,
                                   recorded_gauge=loaded.recorded_gauge, store=gauges.records_dir(),
                                   progress=gauging)
        spent["gauge"] = time.monotonic() - started
    return admitted.tasks, loaded.tasks_from, coverage, admitted, spent


@task(name="gate-arm", **_STAGE)
def gate_arm(arm: str, tasks: list[Task], source: str, backend: str, per_task: int, chat_config,
             workers: int, limits: Limits, strict: bool = True, progress=None,
             admitted: Admission | None = None) -> tuple[list[GateOutcome], float]:
    started = time.monotonic()
    admitted = admitted or Admission(tasks)
    with open_source(source, per_task=per_task, chat_config=chat_config, strict=strict) as src, backends.create(backend) as sandbox:
        outcomes = run_arm(arm, arm_tasks(arm, tasks), src, sandbox, workers=workers, limits=limits,
                           caps=HmixCaps(calls=per_task), progress=progress, refusals=admitted.refusals)
    return admitted.stamp(outcomes), time.monotonic() - started


@task(name="write-gate-stage", **_STAGE)
def write_gate_stage(path: Path, run: core.GateRun, outcomes: list[GateOutcome]) -> StageWrite:
    return GATE.attach(path, run.run_id).write_stage("gate", core.gate_frames(run, outcomes))


@task(name="score-deliveries", **_STAGE)
def score_deliveries(path: Path, run: core.GateRun, tasks: list[Task], outcomes: list[GateOutcome],
                     backend: str, workers: int, limits: Limits,
                     profile: str = "default", progress=None) -> tuple[list[delivery.DeliveryRow], StageWrite, float]:
    started = time.monotonic()
    with backends.create(backend) as sandbox:
        rows = delivery.score_deliveries(outcomes, core.hidden_suites(tasks), sandbox, workers=workers,
                                         limits=limits, profile=profile, reference_seconds=core.hidden_timing(tasks),
                                         progress=progress)
    seconds = time.monotonic() - started
    gate = core.gate_frames(run, outcomes)
    written = GATE.attach(path, run.run_id).write_stage("deliveries", core.delivery_frames(run, rows), related=gate)
    return rows, written, seconds


@task(name="write-deliveries", **_STAGE)
def write_deliveries(path: Path, run: core.GateRun, outcomes: list[GateOutcome],
                     rows: list[delivery.DeliveryRow]) -> StageWrite:
    return GATE.attach(path, run.run_id).write_stage("deliveries", core.delivery_frames(run, rows),
                                                     related=core.gate_frames(run, outcomes))
