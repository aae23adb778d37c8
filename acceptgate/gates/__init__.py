"""The acceptance gates by name, and running one arm over many tasks.

Every gate function takes a ``PublicTask`` (statement, entry point, visible suite): the hidden GT
suite has no way in. ``public_tasks`` is where a Task's hidden suite is dropped.
"""

from __future__ import annotations

from typing import Callable, Iterable, Mapping

from acceptgate.gates.conform import run_conform
from acceptgate.gates.hmix import HmixCaps, run_hmix
from acceptgate.gates.leaky import ARM as LEAKY_ARM
from acceptgate.gates.leaky import leaky_public_task
from acceptgate.gates.off import run_off
from acceptgate.gates.records import GateOutcome, MessageLog
from acceptgate._util.parallel import parallel_map
from acceptgate.sandbox.backend import Backend, Limits
from acceptgate.sources.base import CandidateSource, PublicTask
from acceptgate.datasets.task import Task

ARMS = ("conform", "hmix", "off", LEAKY_ARM)  # LEAKY_ARM: deliberately broken, a leak-audit demonstration
GATED_ARMS = ("conform", "hmix", LEAKY_ARM)  # the arms that decide with V (OFF delivers ungated)
# The policy's default: the gated arms refuse a task whose V, measured on its certified pool, accepts
# more than this share (%) of the attacks (FPR_h). Why this value: docs/v4v.md, "Gates decide only on
# certified tasks".
DEFAULT_MAX_FPR_ATTACK = 50.0


def check_arm(arm: str) -> str:
    if arm not in ARMS:
        raise ValueError(f"unknown arm {arm!r}; valid arms: {', '.join(ARMS)}")
    return arm


def public_tasks(tasks: Iterable[Task]) -> list[PublicTask]:
    return [PublicTask.from_task(t) for t in tasks]


def arm_tasks(arm: str, tasks: Iterable[Task]) -> list[PublicTask]:
    """What an arm is handed: the public view, except for the deliberately leaky demonstration arm."""
    return [leaky_public_task(t) for t in tasks] if arm == LEAKY_ARM else public_tasks(tasks)


def run_gate(arm: str, task: PublicTask, source: CandidateSource, backend: Backend, *,
             limits: Limits = Limits(), caps: HmixCaps = HmixCaps()) -> GateOutcome:
    if not isinstance(task, PublicTask):  # structural: a Task (with its hidden suite) is refused
        raise TypeError(f"gates take a PublicTask, not {type(task).__name__}")
    check_arm(arm)
    if arm == "conform":
        return run_conform(task, source, backend, max_draws=caps.calls, limits=limits)
    if arm == "hmix":
        return run_hmix(task, source, backend, caps=caps, limits=limits)
    if arm == LEAKY_ARM:
        out = run_hmix(task, source, backend, caps=caps, limits=limits)
        out.arm = LEAKY_ARM
        return out
    return run_off(task, source)


def refuse(arm: str, task: PublicTask, source: CandidateSource, reason: str) -> GateOutcome:
    """A task the gate refuses before drawing anything (its V is too weak to decide with, by policy)."""
    out = GateOutcome(task.task_id, arm, source.name, task.visible.spec_hash, decision="refused", stop_reason=reason)
    log = MessageLog()
    log.add(1, "harness", "stop_decision", f"refused: {reason}")
    out.messages = log.messages
    return out


def run_arm(arm: str, tasks: list[PublicTask], source: CandidateSource, backend: Backend, *,
            workers: int = 2, limits: Limits = Limits(), caps: HmixCaps = HmixCaps(),
            progress: Callable[[int, int], None] | None = None,
            refusals: Mapping[str, str] | None = None) -> list[GateOutcome]:
    """One arm over many tasks (threads: the work is in sandbox processes or HTTP); task order kept.
    ``refusals``: task id -> why an arm that decides with V refuses it outright (OFF uses no V)."""
    check_arm(arm)
    refused = refusals if arm in GATED_ARMS else None

    def one(t: PublicTask) -> GateOutcome:
        if refused and t.task_id in refused:
            return refuse(arm, t, source, refused[t.task_id])
        return run_gate(arm, t, source, backend, limits=limits, caps=caps)

    return parallel_map(one, tasks, workers=workers, progress=progress)
