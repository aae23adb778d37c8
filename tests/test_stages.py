"""The stage marks behind `bench/bench_samples.py --breakdown`: every stage of an execution is counted
once per execution or once per case, and nothing is recorded while they are off."""

from __future__ import annotations

from acceptgate.suites import render, suitespec
from acceptgate.sandbox import stages
from acceptgate.sandbox.backend import Limits
from acceptgate.sandbox.executor import execute


def test_each_stage_is_marked_per_execution_or_per_case(local_backend):
    harness = render.harness_for(suitespec.build("python-call/1", "f", [((i,), {}, i) for i in range(3)]))
    stages.enable()
    try:
        result = execute(harness, "def f(x):\n    return x\n", local_backend, limits=Limits(wall_seconds=5))
    finally:
        spent = stages.disable()
    assert result.verdict == "pass"
    counts = {stage: count for stage, (count, _, _) in spent.items()}
    assert counts == {"spawn": 1, "load": 1, "round trip": 3, "compare": 3, "teardown": 1}, spent
    assert all(cpu >= 0 and wall >= 0 for _, cpu, wall in spent.values())
    execute(harness, "def f(x):\n    return x\n", local_backend, limits=Limits(wall_seconds=5))
    assert stages.disable() == spent  # off: the second execution added nothing
