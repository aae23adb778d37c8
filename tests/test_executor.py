"""The two-process sandbox: real candidate processes on the local backend, verdicts and the hidden oracle."""

from __future__ import annotations

import os
import secrets
import socket
import threading

import pytest

from acceptgate.suites import render, suitespec
from acceptgate.sandbox.backend import Limits
from acceptgate.sandbox.executor import VERDICTS, execute, run_calls

SHORT = Limits(wall_seconds=3)


def harness(cases, entry_point="f", dialect="python-call/1"):
    return render.harness_for(suitespec.build(dialect, entry_point, cases))


ADD = harness([((1, 2), {}, 3), ((2, 2), {}, 4), ((-1, 1), {}, 0)], entry_point="add")


@pytest.mark.parametrize("source,verdict", [
    ("def add(a, b): return a + b", "pass"),
    ("def add(a, b): return a - b", "fail"),
    ("def add(a, b): raise ValueError('no')", "error"),
    ("def add(a, b) return", "error"),  # does not load
    ("def other(a, b): return a + b", "error"),  # entry point missing
    ("import numpy_does_not_exist\ndef add(a, b): return a + b", "error"),
    ("def add(a, b):\n    while True: pass", "timeout"),
    ("def add(a, b):\n    x = bytearray(1 << 30)\n    return a + b", "memory"),
    ("import ctypes\ndef add(a, b): return ctypes.string_at(0)", "crash"),
    ("import os, signal\ndef add(a, b): os.kill(os.getpid(), signal.SIGABRT)", "crash"),
    ("import sys\ndef add(a, b): sys.exit(0)", "protocol"),
    ("import os\ndef add(a, b): os._exit(0)", "protocol"),
    ("class E:\n    def __eq__(self, o): return True\n    __hash__ = object.__hash__\ndef add(a, b): return E()", "protocol"),
    ("class I(int):\n    def __eq__(self, o): return True\n    __hash__ = int.__hash__\ndef add(a, b): return I(a + b)", "protocol"),
    ("def add(a, b):\n    yield a + b", "protocol"),
    ("def add(a, b): return [a + b, object()]", "protocol"),
    ("def add(a, b):\n    print('ok', a + b)\n    return a + b", "pass"),  # prints cannot forge frames
])
def test_verdicts(local_backend, source, verdict):
    result = execute(ADD, source, local_backend, limits=SHORT)
    assert result.verdict == verdict, result.as_dict()
    assert result.verdict in VERDICTS
    assert len(result.spec_hash) == 64 and len(result.render_hash) == 64 and len(result.candidate_sha256) == 64


def test_failing_case_reports_args_got_want(local_backend):
    result = execute(ADD, "def add(a, b): return a * b", local_backend)
    assert [c.status for c in result.cases] == ["fail", "pass", "fail"]
    first = result.cases[0]
    assert (first.args, first.got, first.want) == ("(1, 2)", "2", "3")
    assert result.cases_passed == 1


def test_fail_fast_stops_at_first_failure(local_backend):
    result = execute(ADD, "def add(a, b): return 0", local_backend, fail_fast=True)
    assert result.verdict == "fail" and len(result.cases) == 1


def test_blocks_are_fixed_by_the_case_count_alone(local_backend):
    """A hidden suite's blocks: min(n, 64) cases, then doubling, the last one what is left -- the same plan
    whatever the answers; the execution stops at the end of the block holding the first failing case."""
    from acceptgate.sandbox.executor import block_plan

    assert [block_plan(n) for n in (0, 1, 64, 65, 300)] == [(), (1,), (64,), (64, 1), (64, 128, 108)]
    for n in range(0, 3000, 97):
        plan = block_plan(n)
        assert sum(plan) == n and all(b == 2 * a for a, b in zip(plan, plan[1:-1])), plan
        assert not plan or plan[0] == min(n, 64) and 0 < plan[-1] <= (64 << (len(plan) - 1))
    suite = harness([((i,), {}, i) for i in range(300)])
    sources = {
        "def f(x): return x": ("pass", 300),
        "def f(x): return -1": ("fail", 64),
        "def f(x): return x if x != 100 else 0": ("fail", 192),
        "def f(x): return x if x != 299 else 0": ("fail", 300),
        "def f(x):\n    if x == 70: raise ValueError(x)\n    return 0 if x == 90 else x": ("error", 192),
        "def f(x):\n    if x == 63: raise SystemExit\n    return x": ("protocol", 64),
    }
    for source, (verdict, run) in sources.items():
        result = execute(suite, source, local_backend)
        assert (result.verdict, len(result.cases), result.blocks) == (verdict, run, (64, 128, 108)), source
    every = execute(suite, "def f(x): return -1", local_backend, all_cases=True)
    assert (every.verdict, len(every.cases), every.blocks) == ("fail", 300, (300,))
    fast = execute(suite, "def f(x): return -1", local_backend, fail_fast=True)
    assert (fast.verdict, len(fast.cases), fast.blocks) == ("fail", 1, ())


def test_forged_frames_on_any_descriptor_are_protocol_not_pass(local_backend):
    forge = (
        "import os\n"
        "def add(a, b):\n"
        "    for fd in range(3, 20):\n"
        "        try:\n"
        "            os.write(fd, b'0123456789abcdef0123456789abcdef ok 1\\n3')\n"
        "        except OSError:\n"
        "            pass\n"
        "    return a - b\n"
    )
    result = execute(ADD, forge, local_backend, limits=SHORT)
    assert result.verdict == "protocol", result.as_dict()


def test_kwargs_and_tolerance_dialect(local_backend):
    h = harness([((1.0,), {"scale": 3.0}, 1.0 / 3.0)], dialect="python-call+atol=1e-06/1")
    assert execute(h, "def f(x, scale=1.0): return round(x / scale, 7)", local_backend).verdict == "pass"
    assert execute(h, "def f(x, scale=1.0): return round(x / scale, 3)", local_backend).verdict == "fail"


def test_state_does_not_survive_between_executions(local_backend):
    source = (
        "import os\n"
        "def add(a, b):\n"
        "    seen = os.path.exists('marker')\n"
        "    open('marker', 'w').write('x')\n"
        "    return a + b + (100 if seen else 0)\n"
    )
    # Within one execution the file persists (case 2 sees it); a new execution starts clean.
    for _ in range(2):
        result = execute(ADD, source, local_backend)
        assert [c.status for c in result.cases] == ["pass", "fail", "fail"]


def test_candidate_cannot_find_the_expected_values(local_backend, tmp_path, monkeypatch):
    secret = "EXPECTEDVALUE-" + secrets.token_hex(16)
    monkeypatch.setenv("ACCEPTGATE_TEST_SECRET", secret)  # in the harness's own environment
    spec_file = tmp_path / "suite.json"
    spec = suitespec.build("python-call/1", "probe", [((), {}, secret)])
    spec_file.write_text(spec.to_json())
    spy = r'''
import gc, os, re, sys
PATTERN = re.compile(rb"EXPECTED" rb"VALUE-[0-9a-f]{32}")

def _scan(data, where, found):
    if PATTERN.search(data):
        found.append(where)

def probe():
    found = []
    _scan(repr(dict(os.environ)).encode(), "env", found)
    _scan(" ".join(sys.argv).encode(), "argv", found)
    for obj in gc.get_objects():
        try:
            _scan(repr(obj).encode("utf-8", "replace"), "objects", found)
        except Exception:
            pass
    with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb") as mem:
        for line in maps:
            addr, perms = line.split()[:2]
            if "r" not in perms:
                continue
            lo, hi = (int(x, 16) for x in addr.split("-"))
            try:
                mem.seek(lo)
                _scan(mem.read(hi - lo), "memory", found)
            except (OSError, ValueError, OverflowError):
                pass
    ppid = os.getppid()
    for name in ("environ", "cmdline", "mem"):
        try:
            with open(f"/proc/{ppid}/{name}", "rb") as fh:
                _scan(fh.read(1 << 20), "parent " + name, found)
        except OSError:
            pass
    for root in (os.getcwd(), "/tmp", os.environ.get("HOME", "/root")):
        for dirpath, _, files in os.walk(root):
            for fn in files:
                try:
                    with open(os.path.join(dirpath, fn), "rb") as fh:
                        _scan(fh.read(1 << 20), "file " + os.path.join(dirpath, fn), found)
                except OSError:
                    pass
    return "none" if not found else "found: " + ", ".join(sorted(set(found)))
'''
    result = execute(render.harness_for(suitespec.load(spec_file)), spy, local_backend, limits=Limits(wall_seconds=20))
    assert result.verdict == "fail", result.as_dict()
    assert result.cases[0].got == "'none'", result.cases[0].got


def _listener():
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.2)
    seen = []
    stop = threading.Event()

    def accept():
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
                seen.append(conn)
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    return srv, seen, stop, t


def test_socket_and_outside_file_access_are_either_blocked_or_declared(local_backend, tmp_path):
    outside = tmp_path / "world-readable.txt"
    outside.write_text("outside")
    os.chmod(tmp_path, 0o755)
    os.chmod(outside, 0o644)
    srv, seen, stop, t = _listener()
    port = srv.getsockname()[1]
    source = (
        "import socket\n"
        "def f():\n"
        "    out = []\n"
        "    try:\n"
        f"        socket.create_connection(('127.0.0.1', {port}), timeout=1).close(); out.append('net')\n"
        "    except OSError:\n"
        "        pass\n"
        "    try:\n"
        f"        open({str(outside)!r}).read(); out.append('file')\n"
        "    except OSError:\n"
        "        pass\n"
        "    return out\n"
    )
    try:
        result = execute(harness([((), {}, [])]), source, local_backend, limits=SHORT)
    finally:
        stop.set()
        t.join()
        srv.close()
    got = result.cases[0].got or "[]"
    iso = result.isolation
    not_enforced = " ".join(iso["not_enforced"])
    if "'net'" in got or seen:
        assert "network" in not_enforced, iso
    else:
        assert "network" not in not_enforced
    if "'file'" in got:
        assert "filesystem" in not_enforced, iso


def test_run_calls_returns_reference_outputs(local_backend):
    outcomes, detail = run_calls("f", [((2,), {}), ((0,), {})], "def f(x): return 10 // x", local_backend)
    assert detail == ""
    assert outcomes[0].status == "ok" and outcomes[0].value == 5
    assert outcomes[1].status == "error" and outcomes[1].error_type == "ZeroDivisionError"


def test_huge_result_is_a_failure_without_being_parsed(local_backend):
    h = harness([((), {}, [0, 1])])
    assert h.result_limit == 1024 * 1024
    result = execute(h, "def f():\n    return [0] * 3_000_000\n", local_backend)
    assert result.verdict == "fail", result.as_dict()
    assert "larger than the expected value allows" in result.cases[0].got


# --- the trusted side survives any answer (issue 7) ------------------------------------------------

def test_comparison_is_total_in_a_tolerance_dialect(local_backend):
    """abs(10**400 - 1.5) and math.isinf(10**400) raise OverflowError: each is that case's failure."""
    h = harness([((0,), {}, 1.5), ((1,), {}, 10 ** 400), ((2,), {}, 2.0)], dialect="python-call+atol=1e-06/1")
    result = execute(h, "def f(x):\n    return [10 ** 400, 1.0, 2.0][x]", local_backend, limits=SHORT)
    assert [c.status for c in result.cases] == ["fail", "fail", "pass"], result.as_dict()
    assert result.cases[0].error_type == "ComparisonError" and "OverflowError" in result.cases[0].message
    assert result.verdict == "fail"


def test_type_names_and_load_errors_are_truncated(local_backend):
    big = "def f(x):\n    raise type('E' * 4_000_000, (Exception,), {})('m' * 4_000_000)\n"
    result = execute(harness([((1,), {}, 1)]), big, local_backend, limits=SHORT)
    assert result.verdict == "error" and len(result.to_json()) < 20_000, len(result.to_json())
    assert result.cases[0].error_type.startswith("candidate.EEE")
    load = execute(ADD, "raise type('L' * 4_000_000, (Exception,), {})('m' * 4_000_000)", local_backend,
                   limits=SHORT)
    assert load.verdict == "error" and len(load.detail) <= 2000 and len(load.to_json()) < 20_000
    assert load.exit == "exit code 0", load.exit  # what happened: the runner reported and ended


def test_a_candidate_class_named_memoryerror_is_an_error(local_backend):
    result = execute(ADD, "class MemoryError(Exception): pass\ndef add(a, b): raise MemoryError()",
                     local_backend, limits=SHORT)
    assert result.verdict == "error" and result.cases[0].error_type == "candidate.MemoryError"


def test_timeout_from_the_cpu_limit_is_observed_not_claimed(local_backend):
    one = harness([((0,), {}, 0)])
    spin = execute(one, "def f(x):\n    while True: pass", local_backend,
                   limits=Limits(wall_seconds=30, cpu_seconds=1))
    assert spin.verdict == "timeout" and "CPU limit" in spin.detail, spin.as_dict()
    claimed = execute(one, "import os, signal\ndef f(x): os.kill(os.getpid(), signal.SIGXCPU)", local_backend,
                      limits=SHORT)
    assert claimed.verdict == "crash" and "sent by the candidate" in claimed.detail, claimed.as_dict()


def test_texts_from_the_candidate_are_always_encodable(local_backend):
    result = execute(harness([((1,), {}, 1)]), "def f(x): raise ValueError('\\udc80' * 3)", local_backend,
                     limits=SHORT)
    assert result.verdict == "error" and "\\udc80" in result.cases[0].message
    result.to_json().encode("utf-8")  # a writer of results never fails on a lone surrogate


def test_an_answer_too_costly_to_judge_is_a_failed_case_not_the_candidates_timeout(local_backend, monkeypatch):
    """The harness reads answers on its own CPU budget (not the candidate's wall clock): past it, the
    answer is a failed case saying so, and the next case is still judged."""
    from acceptgate.sandbox import executor

    monkeypatch.setattr(executor, "JUDGE_CPU_SECONDS", 0.0)
    harness = render.harness_for(suitespec.build("python-call/1", "f", [((0,), {}, [1]), ((1,), {}, 1)]))
    result = execute(harness, "def f(x):\n    return [[]] * 100_000 if x == 0 else 1\n", local_backend)
    assert [c.status for c in result.cases] == ["fail", "pass"], result.as_dict()
    assert "too costly to judge" in result.cases[0].got and result.verdict == "fail"


def test_many_jobs_run_one_harness_at_a_time_in_turn_and_come_back_in_order(local_backend, monkeypatch):
    """execute_many takes one job of each harness in turn (in windows of INTERLEAVE_HARNESSES), so a
    task's samples, which tend to cost alike, are spread over the run; results keep the jobs' order."""
    from acceptgate.sandbox import executor

    monkeypatch.setattr(executor, "INTERLEAVE_HARNESSES", 2)
    harnesses = [render.harness_for(suitespec.build("python-call/1", "f", [((1,), {}, 1 + k)])) for k in range(3)]
    jobs = [(harnesses[k], f"def f(x):\n    return x + {k if i != 1 else 9}\n") for k in range(3) for i in range(3)]
    seen: list[tuple[int, str]] = []
    real = executor.execute

    def recorded(harness, source, *args, **kwargs):
        seen.append((harnesses.index(harness), source))
        return real(harness, source, *args, **kwargs)

    monkeypatch.setattr(executor, "execute", recorded)
    results = executor.execute_many(jobs, local_backend, fail_fast=True, workers=1)
    assert [k for k, _ in seen] == [0, 1, 0, 1, 0, 1, 2, 2, 2]
    assert [s for _, s in seen][:2] == [jobs[0][1], jobs[3][1]]
    assert [r.verdict for r in results] == ["pass", "fail", "pass"] * 3
    assert [r.spec_hash for r in results] == [h.spec_hash for h, _ in jobs]


def test_once_a_job_runs_out_of_time_the_rest_of_its_harness_goes_first(local_backend, monkeypatch):
    """A task whose samples loop: after its first timeout, its samples not taken yet run next (instead
    of one per round, the last possibly alone at the end of the batch); once per harness; results in
    the jobs' order, verdicts unchanged."""
    from acceptgate.sandbox import executor

    harnesses = [render.harness_for(suitespec.build("python-call/1", "f", [((1,), {}, 1 + k)])) for k in range(3)]
    loops = "def f(x):\n    while True:\n        pass\n"
    # harness 1's samples all loop; the others pass
    jobs = [(harnesses[k], loops if k == 1 else f"def f(x):\n    return x + {k}\n", Limits(wall_seconds=0.3))
            for k in range(3) for _ in range(4)]
    seen: list[int] = []
    real = executor.execute

    def recorded(harness, source, *args, **kwargs):
        seen.append(harnesses.index(harness))
        return real(harness, source, *args, **kwargs)

    monkeypatch.setattr(executor, "execute", recorded)
    results = executor.execute_many([(h, s) for h, s, _ in jobs], local_backend, limits=Limits(wall_seconds=0.3),
                                    workers=1)
    # interleaved: 0 1 2, then harness 1 timed out: its three left go first, then the rest in turn
    assert seen == [0, 1, 1, 1, 1, 2, 0, 2, 0, 2, 0, 2], seen
    assert [r.verdict for r in results] == ["pass"] * 4 + ["timeout"] * 4 + ["pass"] * 4


def test_the_job_queue_reorders_only_what_is_not_taken():
    from acceptgate.sandbox.executor import JobQueue

    class R:
        def __init__(self, verdict):
            self.verdict = verdict

    a, b = object(), object()
    queue = JobQueue([(a,), (a,), (a,), (b,), (b,), (b,)])
    taken = [queue.take(), queue.take()]  # a then b: one of each harness in turn
    assert taken == [0, 3]
    queue.done(0, R("fail"))  # not a timeout: nothing moves
    assert queue.take() == 1
    queue.done(3, R("timeout"))  # b's untaken jobs (4, 5) go first
    queue.done(4, R("timeout"))  # once per harness
    assert [queue.take() for _ in range(4)] == [4, 5, 2, None]



def test_calls_and_answers_larger_than_the_pipes_do_not_block_each_other(local_backend):
    """A block's calls written ahead while its answers come back, each side larger than a pipe's buffer:
    neither waits for the other (a harness that wrote the block before reading would never finish)."""
    big = "x" * 20_000
    suite = harness([((big + str(i),), {}, big + str(i)) for i in range(64)])
    result = execute(suite, "def f(s): return s", local_backend, limits=Limits(wall_seconds=20))
    assert (result.verdict, len(result.cases)) == ("pass", 64), result.as_dict()
