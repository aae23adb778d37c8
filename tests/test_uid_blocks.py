"""Slot uids across harness processes, a forked one included.

Every harness process claims a block of slot uids of its own (hostprobe._claim_block): a uid's
RLIMIT_NPROC count is per uid, and cleaning up a slot kills every process running as its uid. A process
forked from a harness inherited its parent's block (the probe's cached answer, the flock's open file
description), so the two handed out the same uids: when one closed its backend it killed the other's
running execution (seen as a "crash (killed by SIGKILL)" verdict on a sample that passes).
"""

from __future__ import annotations

import json
import os
import threading
import time

import pytest

from acceptgate.suites import render, suitespec
from acceptgate.sandbox import backend as backends
from acceptgate.sandbox import hostprobe
from acceptgate.sandbox.executor import execute

CAPS = hostprobe.probe()
needs_slots = pytest.mark.skipif(CAPS.uid_slots is None, reason=f"no uid slots: {CAPS.uid_problem}")
SLEEPER = "import time\ndef f(x):\n    time.sleep(4)\n    return x"  # outlasts the child's work, even on a busy machine


def _fork(work, *args) -> tuple[int, int]:
    """``work(*args)`` in a forked child; (its pid, the read end of its JSON answer)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(r)
            try:
                answer = work(*args)
            except BaseException as exc:  # noqa: BLE001 -- reported to the parent
                answer = {"error": f"{type(exc).__name__}: {exc}"}
            os.write(w, json.dumps(answer).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    return pid, r


def _answer(pid: int, r: int) -> dict:
    with os.fdopen(r, "rb") as f:
        raw = f.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, raw
    return json.loads(raw)


def _child_uids() -> dict:
    slots = hostprobe.probe().uid_slots
    return {"uids": [slots.start, slots.stop] if slots else None}


@needs_slots
def test_a_forked_harness_claims_slot_uids_of_its_own():
    got = _answer(*_fork(_child_uids))
    assert got["uids"] is not None, got
    child = range(*got["uids"])
    assert not set(child) & set(CAPS.uid_slots), (child, CAPS.uid_slots)
    assert hostprobe.probe().uid_slots == CAPS.uid_slots  # the parent's block is unchanged


def _run_and_close(go_r: int) -> dict:
    """In the child: wait for the go, then one execution on a backend of its own, closed at once."""
    os.read(go_r, 1)
    harness = render.harness_for(suitespec.build("python-call/1", "f", [((1,), {}, 1)]))
    with backends.create("local") as backend:
        result = execute(harness, "def f(x): return x", backend)
    return {"verdict": result.verdict}


@needs_slots
def test_a_forked_harness_closing_its_backend_leaves_the_parents_execution_running():
    """The child is forked before the parent takes a slot uid, so with a shared block its first slot
    got the very uid of the parent's running execution, and closing it killed that execution."""
    go_r, go_w = os.pipe()
    child = _fork(_run_and_close, go_r)  # before any thread of ours runs: none holds a lock it inherits
    os.close(go_r)
    harness = render.harness_for(suitespec.build("python-call/1", "f", [((1,), {}, 1)]))
    try:
        with backends.create("local") as backend:
            running = {}

            def parent_execution() -> None:
                running["result"] = execute(harness, SLEEPER, backend)

            runner = threading.Thread(target=parent_execution)
            runner.start()
            time.sleep(0.5)  # the parent's runner is in its sleep: its slot holds a uid now
            os.write(go_w, b"g")
            outcome = _answer(*child)
            overlapped = runner.is_alive()  # the child closed its backend while ours still ran
            runner.join(60)
    finally:
        os.close(go_w)
    assert outcome.get("verdict") == "pass", outcome
    result = running["result"]
    assert result.verdict == "pass", result.as_dict()  # (killed with the child's slot: "crash")
    assert overlapped, "the parent's execution ended before the child closed its backend: nothing tested"
