"""The fork-server mode of the local backend: fast, and nothing of one execution reaches the next.

Executions here run one after another on one backend, so they share a slot (asserted: the pool
started one sandbox); each test plants state in one execution and looks for it from the next. Skipped
where the host cannot run the fork server -- except under CI (CI=true), where that is a failure.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from acceptgate.suites import render, suitespec
from acceptgate.sandbox import backend as backends
from acceptgate.sandbox import cgroup, hostprobe, local
from acceptgate.sandbox.backend import Limits
from acceptgate.sandbox.executor import execute, run_calls
from sandbox_probes import DYING_HARNESS, processes_named, started

CAPS = hostprobe.probe()
CI = os.environ.get("CI") == "true"
REPO = Path(__file__).resolve().parents[1]


def _make_backend() -> local.LocalBackend:
    try:
        return local.LocalBackend(namespaces=True, process_cap="cgroup", forkserver=True)
    except backends.BackendUnavailable as exc:
        if CI:
            pytest.fail(f"fork server unavailable under CI: {exc}")
        pytest.skip(f"fork server unavailable here: {exc}")


@pytest.fixture()
def fresh():
    """A backend of its own (its pool counts only this test's slots)."""
    b = _make_backend()
    yield b
    b.close()


def call(backend, source: str, *args, limits: Limits = Limits()):
    outcomes, detail = run_calls("f", [(args, {})], source, backend, limits=limits)
    assert detail == "" and outcomes and outcomes[0].status == "ok", (outcomes, detail)
    return outcomes[0].value


def one_case(expected, args=(1,)):
    return render.harness_for(suitespec.build("python-call/1", "f", [(tuple(args), {}, expected)]))


# --- what one execution leaves, the next must not find --------------------------------------------

STATE = r'''
import builtins, ctypes, json, os, socket, sys, time

libc = ctypes.CDLL(None, use_errno=True)
IPC_CREAT, O_CREAT, O_RDWR = 0o1000, 0o100, 0o2
X86_64 = os.uname().machine == "x86_64"
SYS_ADD_KEY, SYS_REQUEST_KEY = 248, 249  # x86_64
KEY_SPEC_USER_KEYRING = -4


def look(tag):
    """Every trace a previous execution could have left, by kind."""
    key = int(tag[-6:], 16)
    found = []
    for place in (".", "/tmp", "/dev/shm"):
        if os.path.exists(os.path.join(place, tag)):
            found.append("file in " + place)
    if libc.shmget(key, 0, 0) != -1:
        found.append("sysv shm")
    if libc.msgget(key, 0) != -1:
        found.append("sysv msg")
    if libc.semget(key, 0, 0) != -1:
        found.append("sysv sem")
    if libc.mq_open(("/" + tag).encode(), O_RDWR) != -1:
        found.append("posix mqueue")
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.connect("\0" + tag)
            found.append("abstract socket")
    except OSError:  # refused, or no socket at all (the syscall filter denies socket())
        pass
    if X86_64 and libc.syscall(SYS_REQUEST_KEY, b"user", tag.encode(), None, 0) > 0:
        found.append("user keyring")
    others = [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, os.getpid())]
    if others:
        found.append("processes")
    if getattr(json, "ag_mark", None) or hasattr(builtins, "ag_mark") or os.environ.get("AG_MARK"):
        found.append("module state")
    if sys.getrecursionlimit() == 4321 or sorted([2, 1]) != [1, 2]:
        found.append("patched interpreter")
    return found


def plant(tag):
    key = int(tag[-6:], 16)
    done = []
    for place in (".", "/tmp", "/dev/shm"):
        with open(os.path.join(place, tag), "w") as f:
            f.write("x")
        done.append("file in " + place)
    if libc.shmget(key, 4096, IPC_CREAT | 0o666) != -1:
        done.append("sysv shm")
    if libc.msgget(key, IPC_CREAT | 0o666) != -1:
        done.append("sysv msg")
    if libc.semget(key, 1, IPC_CREAT | 0o666) != -1:
        done.append("sysv sem")
    if libc.mq_open(("/" + tag).encode(), O_CREAT | O_RDWR, 0o666, None) != -1:
        done.append("posix mqueue")
    if X86_64 and libc.syscall(SYS_ADD_KEY, b"user", tag.encode(), b"seen", 4, KEY_SPEC_USER_KEYRING) > 0:
        done.append("user keyring")
    json.ag_mark = builtins.ag_mark = tag
    os.environ["AG_MARK"] = tag
    sys.setrecursionlimit(4321)
    builtins.sorted = lambda *a, **k: ["patched"]
    r, w = os.pipe()
    if os.fork() == 0:  # a detached survivor holding a listening abstract socket
        os.setsid()
        with open("/proc/self/comm", "w") as f:
            f.write(tag)
        try:
            s = socket.socket(socket.AF_UNIX)
            s.bind("\0" + tag)
            s.listen(1)
            os.write(w, b"1")
        except OSError:  # the syscall filter denies socket()
            os.write(w, b"0")
        time.sleep(60)
        os._exit(0)
    if os.read(r, 1) == b"1":
        done.append("abstract socket")
    done += ["processes", "module state", "patched interpreter"]
    return done


def f(tag, phase):
    if phase == "plant":
        before = look(tag)
        done = plant(tag)
        return [before, done, look(tag), os.getpid()]
    child = os.fork()
    if child == 0:
        os._exit(0)
    os.waitpid(child, 0)
    return [look(tag), os.getpid(), child]
'''


def test_nothing_planted_in_one_execution_reaches_the_next(fresh):
    tag = "ag" + secrets.token_hex(6)
    before, planted, visible, pid = call(fresh, STATE, tag, "plant")
    assert before == [] and pid == 2
    # The probe sees each planted kind within the execution (so finding none later means something).
    assert set(planted) <= set(visible), (planted, visible)
    assert {"file in .", "file in /tmp", "file in /dev/shm", "processes", "module state",
            "patched interpreter"} <= set(planted)
    # Keyrings are per host uid, outside every namespace; System V IPC, message queues and sockets are
    # the host's where a backend has no namespace for them: the syscall filter denies them all.
    assert not {"user keyring", "sysv shm", "sysv msg", "sysv sem", "posix mqueue", "abstract socket"} & set(planted)
    # The slot's watcher sees the execution gone before the slot is reused (SlotPool.ended).
    assert fresh.pool.idle_slots() and not processes_named(tag), "the survivor outlived its execution"
    found, pid, child = call(fresh, STATE, tag, "look")
    assert found == [], found
    assert (pid, child) == (2, 3), "the pid counter is the execution's own"
    assert fresh.pool.started == 1, "both executions must have used the same slot"


def test_every_execution_is_a_fresh_unprivileged_process(fresh):
    view = r'''
import ctypes, os
def f(x):
    libc = ctypes.CDLL(None, use_errno=True)
    status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines())
    caps = {k: status[k].strip() for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")}
    return {
        "uid": (os.getuid(), os.geteuid(), os.getgid()), "caps": caps,
        "no_new_privs": status["NoNewPrivs"].strip(), "pids": sorted(os.listdir("/proc"))[:3],
        "fds": sorted(int(x) for x in os.listdir("/proc/self/fd")), "cwd": os.getcwd(),
        "here": os.listdir("."), "userns": libc.unshare(0x10000000) == 0,
        "ptrace_init": libc.ptrace(16, 1, None, None) == 0,
        "init_mem": os.access("/proc/1/mem", os.R_OK), "kill_init": os.kill(1, 9),
        "writable_sys": os.access("/proc/sys/user/max_user_namespaces", os.W_OK),
    }
'''
    first = call(fresh, view, 1)
    second = call(fresh, view, 1)
    assert first == second
    assert first["uid"] == (65534, 65534, 65534)
    assert set(first["caps"].values()) == {"0000000000000000"} and first["no_new_privs"] == "1"
    assert first["pids"][:2] == ["1", "2"] and not first["pids"][2].isdigit()  # the init and itself
    assert first["fds"][:3] == [0, 1, 2] and max(first["fds"]) <= 6  # stdio, the runner's pipes, listdir
    assert first["cwd"] == "/sandbox" and first["here"] == []
    assert not first["userns"], "no nested user namespaces"
    assert not first["ptrace_init"] and not first["init_mem"]
    assert not first["writable_sys"]
    assert fresh.pool.started == 1


def _switches(pid: int) -> list[str]:
    return [line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if "ctxt_switches" in line]


def _stat_while_waiting(pid: int, path: str, timeout: float = 60.0) -> os.stat_result:
    """os.stat(path), taken while process pid slept in select()/poll() throughout: the same wait before
    and after, and not one context switch of it in between."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        before = _switches(pid)
        if Path(f"/proc/{pid}/wchan").read_text().startswith(("poll_schedule_timeout", "do_select")):
            found = os.stat(path)
            if (_switches(pid) == before
                    and Path(f"/proc/{pid}/wchan").read_text().startswith(("poll_schedule_timeout", "do_select"))):
                return found
        time.sleep(0.01)
    pytest.fail(f"process {pid} never waited in select() or poll() for {timeout:g} s")


def test_the_fork_server_is_non_dumpable_and_unreachable(fresh):
    assert call(fresh, "def f(x): return x", 7) == 7
    slot = fresh.pool.idle_slots()[0]
    zygote = slot.zygote_pid()
    assert zygote is not None
    status = Path(f"/proc/{zygote}/status").read_text()
    assert f"\nUid:\t{slot.uid}\t" in status and (slot.uid == 65534 or slot.uid >= 2_000_000_000)
    # Non-dumpable: the kernel makes its /proc files root's, so its own uid cannot ptrace or read it.
    # (While it makes an execution's init -- after the previous execution has ended, before the next
    # one starts: no candidate exists -- it is dumpable for a moment, to write the init's id maps; the
    # next environment is built right after `call` returns, so look while it waits for a request.)
    assert _stat_while_waiting(zygote, f"/proc/{zygote}/mem").st_uid == 0
    # One capability, in its own sandbox's user namespace only: CAP_SYS_ADMIN, which the kernel asks for
    # to fork a runner into an execution's pid namespace (the runner leaves that user namespace first).
    assert all(line.split()[1] == f"{1 << 21:016x}" for line in status.splitlines()
               if line.startswith(("CapEff", "CapPrm")))
    assert all(line.split()[1] == "0000000000000000" for line in status.splitlines()
               if line.startswith(("CapInh", "CapAmb")))


def test_isolation_states_the_fork_server_mode(fresh):
    iso = fresh.isolation(Limits()).as_dict()
    enforced = "\n".join(iso["enforced"])
    assert iso["backend"] == "local-forkserver" or iso["backend"] == fresh.name
    assert "fork server: every execution is a fresh process" in enforced
    assert "fresh user, pid, mount, ipc, uts namespaces for every execution" in enforced
    assert "the slot's empty network namespace" in enforced
    assert "process cap: cgroup pids.max=16" in enforced and "memory cap: cgroup 128 MiB" in enforced
    assert any("hash seed" in n for n in iso["notes"])


def test_local_is_the_fork_server_where_it_runs():
    with backends.create("local") as b:
        if b.pool is None:
            if CI:
                pytest.fail(f"local did not pick the fork server under CI: {b.forkserver_problem}")
            pytest.skip(f"no fork server here: {b.forkserver_problem}")
        assert any(e.startswith("fork server:") for e in b.isolation(Limits()).enforced)


def test_without_fork_server_the_mode_is_said(monkeypatch):
    with local.LocalBackend(namespaces=True, process_cap="cgroup") as b:
        assert b.pool is None
        assert any("a new sandbox and interpreter per execution" in n for n in b.isolation(Limits()).notes)
    with pytest.raises(backends.BackendUnavailable, match="fork-server"):
        local.LocalBackend(namespaces=False, process_cap="none", forkserver=True)


# --- the caps hold for every execution --------------------------------------------------------------

FORK_COUNT = r'''
import os, time
def f(x):
    n = 0
    while True:
        try:
            pid = os.fork()
        except OSError:
            return n
        if pid == 0:
            time.sleep(30)
            os._exit(0)
        n += 1
'''

FORK_BOMB = r'''
import os
def f(x):
    while True:
        try:
            os.fork()
        except OSError:
            pass
'''


def test_process_cap_holds_for_each_execution(fresh):
    limits = Limits(processes=8)
    first = call(fresh, FORK_COUNT, 1, limits=limits)
    second = call(fresh, FORK_COUNT, 1, limits=limits)
    assert 0 < first < limits.processes and first == second, (first, second)
    bomb = execute(one_case(2), FORK_BOMB, fresh, limits=Limits(wall_seconds=2, processes=8))
    assert bomb.verdict == "timeout", bomb.as_dict()
    assert call(fresh, FORK_COUNT, 1, limits=limits) == first, "the bomb's processes are gone"
    assert fresh.pool.started == 1


MANY = r'''
import os, signal
def f(x):
    kids = []
    for _ in range(3):
        pid = os.fork()
        if pid == 0:
            block = bytearray(100 << 20)
            for i in range(0, len(block), 4096):
                block[i] = 1
            os._exit(0)
        kids.append(pid)
    killed = 0
    for pid in kids:
        _, status = os.waitpid(pid, 0)
        killed += os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    return killed
'''


def test_memory_caps_hold_for_each_execution(fresh):
    """3 x 100 MiB processes, each under the address-space rlimit: the slot's cgroup kills some. The runner
    answers, but the limit was hit: memory, whoever the kernel chose."""
    result = execute(one_case(0), MANY, fresh)
    assert result.verdict == "memory" and int(result.cases[0].got) > 0, result.as_dict()
    assert "memory limit" in result.exit  # the OOM kill is counted for this execution...
    single = execute(one_case(2), "def f(x):\n    b = bytearray(1 << 30)\n    return 2", fresh)
    assert single.verdict == "memory", single.as_dict()
    after = execute(one_case(2), "def f(x): return 2", fresh)
    assert after.verdict == "pass" and "memory" not in after.exit, after.as_dict()  # ...and not the next
    assert fresh.pool.started == 1


def test_an_oom_kill_is_reported_as_memory(fresh):
    """Past the cgroup's cap (not the address-space rlimit): the kernel's OOM killer ends it."""
    fill = r'''
def f(x):
    for place in ("/tmp", "/dev/shm", "/sandbox"):
        for n in range(2):
            with open(place + "/fill%d" % n, "wb") as fh:
                fh.write(b"x" * (15 << 20))
    block = bytearray(90 << 20)
    for i in range(0, len(block), 4096):
        block[i] = 1
    return 0
'''
    result = execute(one_case(2), fill, fresh)
    assert result.verdict == "memory" and "memory limit" in result.exit, result.as_dict()
    assert execute(one_case(2), "def f(x): return 2", fresh).verdict == "pass"


# --- a dubious slot is never reused -----------------------------------------------------------------

def _zygote(backend) -> int:
    idle = backend.pool.idle_slots()
    assert len(idle) == 1
    pid = idle[0].zygote_pid()
    assert pid is not None
    return pid


def test_a_candidate_signals_its_own_process_group_not_the_fork_servers(fresh):
    """kill(0, ...) signals the caller's process group. The runner is a child of the fork server, in
    another pid namespace but (before it called setsid) in the fork server's process group and with its
    uid: the kernel let kill(0) reach the fork server. Now it ends only the runner's own group."""
    assert call(fresh, "def f(x): return x", 1) == 1
    zygote = _zygote(fresh)
    src = "import os, signal\ndef f(x):\n    os.kill(0, signal.SIGKILL)\n    return x"
    result = execute(one_case(1), src, fresh)
    assert result.verdict == "crash" and "SIGKILL" in result.detail, result.as_dict()
    assert call(fresh, "def f(x): return x", 2) == 2
    assert _zygote(fresh) == zygote and fresh.pool.started == 1, "the fork server was killed"


def test_a_killed_zygote_means_a_new_sandbox(fresh):
    assert call(fresh, "def f(x): return x", 1) == 1
    os.kill(_zygote(fresh), signal.SIGKILL)
    assert call(fresh, "def f(x): return x", 2) == 2
    assert fresh.pool.started == 2 and fresh.pool.discarded >= 1


def test_a_stopped_zygote_means_a_new_sandbox(fresh):
    fresh.pool.config = dataclasses.replace(fresh.pool.config, answer_seconds=1.0)
    assert call(fresh, "def f(x): return x", 1) == 1
    slot = fresh.pool.idle_slots()[0]
    zygote = slot.zygote_pid()
    os.kill(zygote, signal.SIGSTOP)
    try:
        assert call(fresh, "def f(x): return x", 2) == 2
        assert fresh.pool.started == 2 and fresh.pool.discarded == 1
        assert slot.popen is None, "the stopped slot was discarded"
        assert not Path(f"/proc/{zygote}").exists() or _is_zombie(zygote)
    finally:
        try:
            os.kill(zygote, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] in ("Z", "X")
    except OSError:
        return True


SOCKETS_LEFT = r'''
import os, socket
def f(x):
    held = [socket.socketpair() for _ in range(x)]  # never closed; a child holds copies past the answer
    if os.fork() == 0:
        import time
        time.sleep(30)
        os._exit(0)
    counts = open("/proc/self/net/sockstat").read().split()
    return [os.readlink("/proc/self/ns/net"), int(counts[counts.index("used") + 1])]
'''


def test_the_network_namespace_is_the_slots_and_nothing_stays_in_it(fresh):
    """Executions of one slot share its network namespace (one at a time); sockets an execution leaves
    open, even in a process that outlives its answer, are gone with it: the fork server finds the
    counts it started with and keeps the slot."""
    first_ns, first_used = call(fresh, SOCKETS_LEFT, 3)
    zygote = _zygote(fresh)
    assert first_ns == os.readlink(f"/proc/{zygote}/ns/net"), "the slot's namespace"
    second_ns, second_used = call(fresh, SOCKETS_LEFT, 3)
    assert second_ns == first_ns and second_used == first_used, "the first execution's 6 sockets are gone"
    assert call(fresh, "def f(x): return x", 1) == 1
    assert fresh.pool.started == 1 and fresh.pool.discarded == 0, "the slot was kept"


def test_a_socket_left_in_the_slots_network_namespace_retires_the_slot(fresh):
    """Should anything stay in the namespace (here a socket put there from outside, as a leftover would
    be), the fork server builds no environment in it again: the next execution gets a new slot."""
    assert call(fresh, "def f(x): return x", 1) == 1
    zygote = _zygote(fresh)
    holder = subprocess.Popen(
        ["nsenter", f"--net=/proc/{zygote}/ns/net", "--", sys.executable, "-c",
         "import socket, sys, time\ns = socket.socketpair()\nprint('held', flush=True)\ntime.sleep(60)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        # The environment for this execution was built before the socket appeared; the next one is not.
        assert call(fresh, "def f(x): return x", 2) == 2
        assert call(fresh, "def f(x): return x", 3) == 3
        assert fresh.pool.started == 2 and fresh.pool.discarded == 1
        assert _zygote(fresh) != zygote
    finally:
        holder.kill()
        holder.wait()


def test_zygote_killed_during_an_execution(fresh):
    slow = "import time\ndef f(x):\n    time.sleep(1.0)\n    return x + 1"
    assert call(fresh, "def f(x): return x", 1) == 1
    zygote = _zygote(fresh)
    killer = threading.Timer(0.3, os.kill, (zygote, signal.SIGKILL))
    killer.start()
    result = execute(one_case(2), slow, fresh)
    killer.join()
    # bubblewrap ends the sandbox with its fork server: the execution in it is killed with it.
    assert result.verdict == "crash" and "SIGKILL" in result.detail, result.as_dict()
    assert call(fresh, "def f(x): return x", 3) == 3
    assert fresh.pool.started == 2, "the slot whose fork server died is not reused"


def test_the_slots_die_with_their_harness():
    """SIGKILL the harness (no cleanup runs): its sandboxes, fork servers and executions must go."""
    tag = "ag" + secrets.token_hex(4)
    child = subprocess.Popen([sys.executable, "-c", DYING_HARNESS, tag, '{"namespaces": true, "process_cap": "cgroup", "forkserver": true}'], stdout=subprocess.PIPE, cwd=str(REPO))
    try:
        line = child.stdout.readline().split()
        assert line[:1] == [b"running"], "the child harness did not start"
        assert started(tag), "the candidate is not running"
        child.kill()
        child.wait()
        deadline = time.monotonic() + 30  # the kernel's teardown, slow on a loaded machine; ends once done
        while processes_named(tag) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not processes_named(tag), "sandbox processes outlived their harness"
        slots = list(Path(CAPS.cgroups.pids).glob(f"acceptgate-slot-{child.pid}-*"))
        assert slots, "the child harness's slot cgroup was not found"
        while any((s / "cgroup.procs").read_text().strip() for s in slots) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any((s / "cgroup.procs").read_text().strip() for s in slots), "a slot process survived"
        # the dead harness could not remove its slots' cgroups: the next sandbox pool on this host does
        after = _make_backend()
        after.close()
        assert not [s for s in slots if s.exists()], "a dead harness's slot cgroups outlived the next pool"
    finally:
        child.kill()
        cgroup.sweep_stale(CAPS.cgroups)


def test_a_harness_that_exits_without_closing_its_backend_leaves_no_cgroup():
    """A program that ends without closing its backend (a library user's script, say): the slots'
    cgroups go at interpreter exit."""
    code = (
        "import os\n"
        "from acceptgate.suites import render, suitespec\n"
        "from acceptgate.sandbox import local\n"
        "from acceptgate.sandbox.executor import execute\n"
        "h = render.harness_for(suitespec.build('python-call/1', 'f', [((1,), {}, 2)]))\n"
        "b = local.LocalBackend(namespaces=True, process_cap='cgroup', forkserver=True)\n"
        "print(execute(h, 'def f(x): return x + 1', b).verdict, os.getpid(), flush=True)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=str(REPO))
    assert out.returncode == 0, out.stderr[-3000:]
    verdict, pid = out.stdout.split()
    assert verdict == "pass"
    left = [g for g in Path(CAPS.cgroups.pids).glob(f"acceptgate-*{pid}-*")
            if g.name.removeprefix("acceptgate-").removeprefix("slot-").split("-")[0] == pid]
    assert not left, left


# --- the streaming harness: one call at a time, judged in order ------------------------------------

MIXED = r'''
def f(x):
    if x == 1500:
        return {"b": 2, "a": 1}
    if x == 1501:
        return {"c", "a", "b"}
    if x == 1502:
        return {float("nan"): 1}
    if x % 7 == 3:
        return -1
    if x % 11 == 5:
        raise ValueError(x)
    return x * 2
'''


def _mixed_harness():
    cases = []
    for x in range(1600):
        want = {"a": 1, "b": 2} if x == 1500 else {"a", "b", "c"} if x == 1501 else \
            {float("nan"): 1} if x == 1502 else x * 2
        cases.append(((x,), {}, want))
    return render.harness_for(suitespec.build("python-call/1", "f", cases))


def test_a_busy_pool_takes_another_slot_while_the_last_execution_ends(fresh):
    """Past its warm-up the pool may keep one slot more than it runs executions at once, so the next
    execution need not wait for the last one's teardown; a slot is still reused only once every
    process of its last execution is gone, and closing the pool ends every slot, tearing down or not."""
    pool = fresh.pool
    runs = pool.WARM_UP + 12
    answers = [call(fresh, "import os\ndef f(x): return [x, os.getpid()]", i) for i in range(runs)]
    assert answers == [[i, 2] for i in range(runs)]  # each runner pid 2 of a namespace of its own
    assert 1 <= pool.started <= 2 and pool.discarded == 0, (pool.started, pool.discarded)
    slots = pool.idle_slots()
    assert len(slots) == pool.started
    pids = [pid for slot in slots for pid in slot.host_pids()]
    assert pids
    tag = "ag" + secrets.token_hex(6)
    assert call(fresh, SURVIVOR.replace("TAG", tag), 1) == 1
    fresh.close()  # at once: the last execution's slot may still be tearing down
    assert not processes_named(tag)
    assert not [pid for pid in pids if Path(f"/proc/{pid}").exists() and not _is_zombie(pid)]
    assert pool.idle_slots() == []


def test_threads_sharing_a_warming_pool_wait_for_each_others_slots(fresh):
    """Before its warm-up the pool keeps one slot per execution in flight: two threads executing at once
    on one backend take the slots the other's executions left (waiting for their teardown, woken when
    one ends), never start a third, and the pool runs no thread of its own to do it."""
    pool = fresh.pool
    threads_before = {t.name for t in threading.enumerate()}
    runs = 12  # per thread: 24 in all, within the warm-up
    answers: dict[int, list] = {}

    def worker(k: int) -> None:
        answers[k] = [call(fresh, "def f(x): return x + 1", k * 100 + i) for i in range(runs)]

    workers = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(120)
    assert answers == {k: [k * 100 + i + 1 for i in range(runs)] for k in range(2)}
    assert 1 <= pool.started <= 2 and pool.discarded == 0, (pool.started, pool.discarded)
    assert len(pool.idle_slots()) == pool.started
    assert {t.name for t in threading.enumerate()} - threads_before <= {"acceptgate-slot-spawner"}


def test_closing_the_pool_ends_a_wait_for_a_slot_at_once(fresh):
    """A thread waiting for an ending slot (no idle one, the pool still warming up) is woken by close():
    a stop does not wait out the teardown deadline. The ending slot here is one whose execution never
    ends: its pidfd is a sleeping process's."""
    pool = fresh.pool
    assert call(fresh, "def f(x): return x", 1) == 1
    slots = pool.idle_slots()
    assert len(slots) == 1
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        with pool._lock:  # the slot, as if its last execution had not ended yet
            pool._idle.remove(slots[0])
            pool._ending[os.pidfd_open(sleeper.pid)] = (slots[0], time.monotonic() + 30.0)
        taken = []
        waiter = threading.Thread(target=lambda: taken.append(pool._take()))
        waiter.start()
        deadline = time.monotonic() + 10.0
        while not pool._waiting and time.monotonic() < deadline:
            time.sleep(0.01)
        assert pool._waiting, "the thread did not wait for the ending slot"
        started = time.monotonic()
        fresh.close()
        waiter.join(10.0)
        assert not waiter.is_alive() and time.monotonic() - started < 2.0, time.monotonic() - started
        assert taken == [None] and pool.discarded == 1 and pool.idle_slots() == []
    finally:
        sleeper.kill()
        sleeper.wait()


SURVIVOR = r'''
import os, sys, ctypes
def f(x):
    if os.fork() == 0:
        ctypes.CDLL(None).prctl(15, b"TAG", 0, 0, 0)  # PR_SET_NAME: findable by name
        os.setsid()
        import time
        while True:
            time.sleep(1)
    return x
'''


def test_a_long_mixed_suite_is_judged_case_by_case(fresh):
    # every case (as score --all-cases): a hidden suite otherwise stops at the end of the block that failed
    result = execute(_mixed_harness(), MIXED, fresh, all_cases=True)
    assert result.verdict == "fail" and len(result.cases) == 1600
    assert [c.index for c in result.cases] == list(range(1600))
    statuses = {c.index: c.status for c in result.cases}
    assert statuses[3] == "fail" and statuses[5] == "error" and statuses[0] == "pass"
    # Another order of a dict, another order of a set: equal. A NaN key is not equal to another NaN.
    assert (statuses[1500], statuses[1501], statuses[1502]) == ("pass", "pass", "fail")


def test_fail_fast_stops_at_the_first_failure_and_the_runner_ends_cleanly(fresh):
    quick = execute(_mixed_harness(), MIXED, fresh, fail_fast=True)
    assert quick.verdict == "fail" and [c.status for c in quick.cases] == ["pass"] * 3 + ["fail"]
    assert quick.exit == "exit code 0", quick.exit  # no call was pending: told to end, it ended


def test_per_case_time_limit(fresh):
    # The limits are on CPU time: the third case spins (a sleep would meet only the wall-clock backstop).
    slow_third = ("import time\ndef f(x):\n    if x == 3:\n        t = time.process_time()\n"
                  "        while time.process_time() - t < 5: pass\n    return x")
    harness = render.harness_for(suitespec.build("python-call/1", "f", [((x,), {}, x) for x in range(6)]))
    result = execute(harness, slow_third, fresh, limits=Limits(wall_seconds=10, case_seconds=0.5))
    assert result.verdict == "timeout" and "0.5 s per case" in result.detail, result.as_dict()
    assert [c.status for c in result.cases] == ["pass"] * 3 + ["timeout"]
    assert result.timeout_clock == "cpu" and result.cpu_seconds < 2  # stopped at the case's limit
    fine = execute(harness, "def f(x): return x", fresh, limits=Limits(wall_seconds=10, case_seconds=0.5))
    assert fine.verdict == "pass"
