"""Running a candidate on the *visible* suite: the only execution a gate may ask for."""

from __future__ import annotations

import threading

from acceptgate.suites.render import Harness, harness_for
from acceptgate.sandbox.backend import Backend, Limits
from acceptgate.sandbox.executor import ExecutionResult, execute
from acceptgate.sources.base import PublicTask

_harnesses: dict[str, Harness] = {}
_lock = threading.Lock()


def visible_harness(task: PublicTask) -> Harness:
    key = task.visible.spec_hash
    with _lock:
        harness = _harnesses.get(key)
    if harness is None:
        harness = harness_for(task.visible)
        with _lock:
            _harnesses[key] = harness
    return harness


def run_visible(task: PublicTask, program: str, backend: Backend, limits: Limits) -> ExecutionResult:
    # All cases (no fail-fast, no blocks): the attempt record keeps how many visible cases passed.
    return execute(visible_harness(task), program, backend, limits=limits, all_cases=True)
