"""``hmix-leaky-gt``: a DELIBERATELY BROKEN arm, for demonstrating and testing the leak audit.

It is H-MIX wired the wrong way: the suite it runs and quotes in its revision feedback is the hidden GT
suite instead of V (the misconfiguration the leak audit exists to catch; SYSTEM.md section 4). Its
false-delivery figures mean nothing and it must never be used to deliver code. ``acceptgate
leak-audit`` flags its records whose feedback quoted hidden-only cases.
"""

from __future__ import annotations

from acceptgate.sources.base import PublicTask
from acceptgate.datasets.task import HIDDEN, Task

ARM = "hmix-leaky-gt"


def leaky_public_task(task: Task) -> PublicTask:
    """The misconfiguration: a 'public' view whose visible suite is the hidden one."""
    return PublicTask(task_id=task.task_id, entry_point=task.entry_point, prompt=task.prompt,
                      visible=task.suites[HIDDEN], dataset=task.dataset, contract=task.contract)


DEMO_NOTE = (f"{ARM} is a DEMONSTRATION arm, deliberately broken: it is shown the hidden GT suite, so its "
             "false-delivery figures are not a result and it is never the best arm; it exists to show that "
             "'acceptgate leak-audit' catches the leak.")


def label_arm(arm: str, *, short: bool = False) -> str:
    """An arm's name for people: the demonstration arm always carries its caveat."""
    if arm != ARM:
        return arm
    return f"{arm} (demo, broken)" if short else f"{arm} (DEMONSTRATION: deliberately broken, sees GT)"
