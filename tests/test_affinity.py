"""CPU pins of batch workers (acceptgate/_util/affinity.py): each worker and the sandbox it drives on one CPU,
only inside a pinned parallel map, never leaking to helper threads or unpinned callers."""

from __future__ import annotations

import os
import secrets
import threading

import pytest

from acceptgate._util import affinity
from acceptgate._util.parallel import parallel_map
from acceptgate.sandbox.executor import run_calls

CPUS = sorted(affinity.process_cpus())
pytestmark = pytest.mark.skipif(len(CPUS) < 2, reason="pins need two CPUs")
MASK = "import os\ndef f(x):\n    return sorted(os.sched_getaffinity(0))\n"


def _own_masks(**map_options):
    """Each worker's CPU mask and pin, two items held at once (so two threads, one per item)."""
    barrier = threading.Barrier(2)

    def own_mask(_):
        barrier.wait(timeout=30)
        return sorted(os.sched_getaffinity(0)), affinity.current()

    return parallel_map(own_mask, range(2), workers=2, **map_options)


@pytest.fixture(autouse=True)
def own_claims(monkeypatch):
    """Claims of this test's own: pinned workers of other test processes (xdist) claim CPUs too, and a
    worker rightly takes the CPU they hold least, which is not what these tests look at."""
    prefix = f"acceptgate-test-{secrets.token_hex(6)}-"
    monkeypatch.setattr(affinity, "claims_prefix", lambda: prefix)


def test_a_pinned_map_gives_each_worker_a_cpu_of_its_own():
    got = _own_masks(pin=True)
    assert sorted(cpu for _, cpu in got) == CPUS[:2]
    assert all(mask == [cpu] for mask, cpu in got)
    assert sorted(os.sched_getaffinity(0)) == CPUS and affinity.current() is None  # the caller untouched


def test_no_pins_without_pin_or_with_more_workers_than_cpus_or_switched_off(monkeypatch):
    assert all(mask == CPUS and cpu is None for mask, cpu in _own_masks())
    assert affinity.worker_pins(len(CPUS) + 1) is None
    monkeypatch.setattr(affinity, "ENABLED", False)  # what bench_samples.py --no-pin sets
    assert all(mask == CPUS and cpu is None for mask, cpu in _own_masks(pin=True))


def test_a_helper_thread_started_by_a_pinned_worker_unpins_itself():
    def start_helper(_):
        seen = []
        inherited = threading.Thread(target=lambda: seen.append(sorted(os.sched_getaffinity(0))))
        helper = threading.Thread(target=lambda: (affinity.unpin(), seen.append(sorted(os.sched_getaffinity(0)))))
        for t in (inherited, helper):
            t.start()
            t.join()
        return seen

    (inherited, unpinned), = parallel_map(start_helper, [0], workers=1, pin=True)
    assert len(inherited) == 1 and unpinned == CPUS


HOLDER = """
import sys, threading
from acceptgate._util import affinity
from acceptgate._util.parallel import parallel_map
affinity.claims_prefix = lambda: sys.argv[1]
def hold(_):
    print(affinity.current(), flush=True)
    sys.stdin.read()  # until the test closes it
parallel_map(hold, [0], workers=1, pin=True)
"""


def test_pinned_workers_of_two_processes_take_different_cpus():
    import subprocess
    import sys

    holder = subprocess.Popen([sys.executable, "-c", HOLDER, affinity.claims_prefix()], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        theirs = int(holder.stdout.readline())
        (_, ours), = parallel_map(lambda _: (None, affinity.current()), [0], workers=1, pin=True)
        assert ours != theirs and {ours, theirs} <= set(CPUS)
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    # its claim went with it: two workers here take two CPUs, the first being the first CPU again
    got = parallel_map(lambda _: affinity.current(), [0], workers=1, pin=True)
    assert got == [CPUS[0]]


def test_the_sandbox_runs_on_its_workers_cpu_and_an_unpinned_caller_gets_every_cpu(local_backend):
    def mask(_):
        outcomes, detail = run_calls("f", [((0,), {})], MASK, local_backend)
        assert detail == "" and outcomes[0].status == "ok", (outcomes, detail)
        return outcomes[0].value, affinity.current()

    for value, cpu in parallel_map(mask, range(6), workers=2, pin=True):
        assert value == [cpu]
    # the same slots, now from this (unpinned) thread: back on every CPU
    assert [mask(0)[0] for _ in range(3)] == [CPUS] * 3
