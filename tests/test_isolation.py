"""The local backend's isolation layers, each exercised with real sandbox processes.

What the host allows is probed once; tests of a layer the host refuses are skipped with the probe's
reason -- except under CI (CI=true), where bubblewrap and the cgroup cap are required.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from acceptgate.suites import render, suitespec
from acceptgate.sandbox import backend as backends
from acceptgate.sandbox import bwrap, cgroup, hostlayers, hostprobe, local, uidslots
from acceptgate.sandbox.backend import Limits
from acceptgate.sandbox.executor import execute, run_calls
from sandbox_probes import DYING_HARNESS, processes_named, started

CAPS = hostprobe.probe()
CI = os.environ.get("CI") == "true"
REPO = Path(__file__).resolve().parents[1]

needs_bwrap = pytest.mark.skipif(CAPS.bwrap is None and not CI, reason=f"no bubblewrap: {CAPS.bwrap_problem}")
needs_cgroup = pytest.mark.skipif(CAPS.cgroups is None and not CI, reason=f"no cgroups: {CAPS.cgroup_problem}")
needs_slots = pytest.mark.skipif(CAPS.uid_slots is None, reason=f"no uid slots: {CAPS.uid_problem}")


def one_case(expected, args=(1,)):
    return render.harness_for(suitespec.build("python-call/1", "f", [(tuple(args), {}, expected)]))


def answer(backend, source, args=(1,), limits=Limits()):
    """What the candidate returned for one call, or (status, detail) if it did not answer."""
    outcomes, detail = run_calls("f", [(tuple(args), {})], source, backend, limits=limits)
    if outcomes and outcomes[0].status == "ok":
        return outcomes[0].value
    return (outcomes[0].status if outcomes else "none"), detail


@pytest.fixture(scope="module")
def bwrap_cgroup():
    with local.LocalBackend(namespaces=True, process_cap="cgroup") as b:
        yield b


# --- the probe ----------------------------------------------------------------------------------

def test_probe_is_cached_and_names_what_it_found():
    assert hostprobe.probe() is CAPS
    assert CAPS.python and os.path.isabs(CAPS.python)
    if CAPS.bwrap is None:
        assert CAPS.bwrap_problem
    if CAPS.cgroups is None:
        assert CAPS.cgroup_problem


def test_ci_gets_the_full_local_isolation():
    if not CI:
        pytest.skip("only enforced under CI=true")
    assert CAPS.bwrap is not None, CAPS.bwrap_problem
    assert CAPS.cgroups is not None, CAPS.cgroup_problem


@needs_bwrap
def test_staged_bwrap_is_reachable_by_the_sandbox_uid():
    assert hostprobe._others_can_reach(CAPS.bwrap.path)
    assert not os.stat(CAPS.bwrap.path).st_mode & 0o022  # nobody but root can replace it


# --- what "local" is, and the loud fallback ------------------------------------------------------

@needs_bwrap
@needs_cgroup
def test_local_is_bwrap_with_cgroup_and_says_so():
    with backends.create("local") as b:
        iso = b.isolation(Limits()).as_dict()
    enforced = "\n".join(iso["enforced"])
    assert iso["backend"] == "local"
    assert "namespaces: user, pid, net, ipc, uts, cgroup, mount" in enforced
    assert "process cap: cgroup pids.max=16" in enforced
    assert "memory cap: cgroup 128 MiB" in enforced
    assert "rlimit address space 128 MiB" in enforced
    assert "seccomp: denied (EPERM) keyctl, add_key, request_key" in enforced
    assert iso["not_enforced"] == []


def test_rlimits_backend_lists_what_it_cannot_enforce():
    with backends.create("local-rlimits") as b:
        iso = b.isolation(Limits()).as_dict()
    missing = "\n".join(iso["not_enforced"])
    for layer in ("namespaces", "network", "filesystem", "process visibility", "memory cap"):
        assert layer in missing
    if CAPS.uid_slots:
        assert any("per-slot uid with RLIMIT_NPROC" in e for e in iso["enforced"])


def test_local_falls_back_loudly_when_the_host_refuses_bubblewrap(monkeypatch, capsys):
    refused = dataclasses.replace(CAPS, bwrap=None, bwrap_problem="user namespaces disabled (simulated)")
    monkeypatch.setattr(hostprobe, "probe", lambda: refused)
    local._warned.clear()
    with backends.create("local") as b:
        result = execute(one_case(2), "def f(x): return x + 1", b)
    err = capsys.readouterr().err
    assert "WARNING" in err and "WITHOUT namespaces" in err and "simulated" in err
    assert result.verdict == "pass"
    assert any("namespaces (user namespaces disabled (simulated))" in m for m in result.isolation["not_enforced"])
    assert result.isolation["backend"] == "local"


def test_no_process_cap_is_reported(monkeypatch, capsys):
    refused = dataclasses.replace(CAPS, cgroups=None, cgroup_problem="no cgroup (simulated)",
                                  uid_slots=None, uid_problem="no slots (simulated)")
    monkeypatch.setattr(hostprobe, "probe", lambda: refused)
    local._warned.clear()
    b = backends.create("local")
    assert "NO process cap" in capsys.readouterr().err
    assert any("process count cap" in m for m in b.isolation(Limits()).not_enforced)


def test_local_bwrap_name_refuses_without_bubblewrap(monkeypatch):
    monkeypatch.setattr(hostprobe, "probe", lambda: dataclasses.replace(CAPS, bwrap=None, bwrap_problem="gone"))
    with pytest.raises(backends.BackendUnavailable, match="gone"):
        backends.create("local-bwrap")


# --- inside the bwrap sandbox --------------------------------------------------------------------

VIEW = r'''
import os, socket
def f(x):
    status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines())
    writable = []
    for d in ("/", "/usr", "/usr/lib/python3.11", "/sandbox", "/tmp", "/dev/shm", "/proc/sys"):
        try:
            open(os.path.join(d, "w-probe"), "w").close()
            writable.append(d)
        except OSError:
            pass
    return {
        "root": sorted(os.listdir("/")),
        "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
        "uid": (os.getuid(), os.geteuid(), os.getgid()),
        "cap_eff": status["CapEff"].strip(),
        "no_new_privs": status.get("NoNewPrivs", "?").strip(),
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "hostname": socket.gethostname(),
        # (socket.if_nameindex needs a netlink socket, which the syscall filter denies)
        "ifaces": sorted(l.split(":")[0].strip() for l in open("/proc/self/net/dev").read().splitlines()[2:]),
        "writable": writable,
        "usr_local": os.path.exists("/usr/local"),
        "nested_userns": __import__("ctypes").CDLL(None).unshare(0x10000000) == 0,
        "work": os.path.exists("/work") or os.path.exists("/root"),
    }
'''


@needs_bwrap
def test_the_sandbox_sees_only_what_the_interpreter_needs(bwrap_cgroup):
    view = answer(bwrap_cgroup, VIEW)
    assert isinstance(view, dict), view
    # A root of its own (a fresh tmpfs): no host directory at all, the standard library from memory
    assert view["root"] == ["dev", "proc", "sandbox", "tmp"], view["root"]
    assert view["pids"] == [1, 2]  # bwrap's init and the runner: nothing of the host
    assert view["uid"] == (65534, 65534, 65534)
    assert view["cap_eff"] == "0000000000000000"
    assert view["cwd"] == "/sandbox"
    assert set(view["env"]) <= {"LC_CTYPE", "PWD"}  # the interpreter's own locale coercion, bwrap's cwd
    assert view["hostname"] == "sandbox"
    assert view["ifaces"] == ["lo"]
    assert view["writable"] == ["/sandbox", "/tmp", "/dev/shm"]
    assert not view["usr_local"] and not view["work"]
    assert not view["nested_userns"]


@needs_bwrap
def test_site_packages_and_other_host_files_stay_out_of_the_view():
    binds = CAPS.bwrap.ro_binds
    assert not any("site-packages" in b or "dist-packages" in b or b.startswith(("/root", "/work", "/home"))
                   for b in binds), binds
    assert "/etc" not in binds and "/usr" not in binds


@needs_bwrap
def test_runner_killed_by_a_signal_is_a_crash_not_a_protocol_error(bwrap_cgroup):
    result = execute(one_case(2), "import os\ndef f(x): os.kill(os.getpid(), 11)", bwrap_cgroup)
    assert result.verdict == "crash" and "SIGSEGV" in result.detail, result.as_dict()


@needs_bwrap
def test_sandbox_dies_with_its_harness():
    """Kill the harness (SIGKILL: no cleanup code runs): the sandbox and everything in it must go."""
    tag = "ag" + secrets.token_hex(4)
    child = subprocess.Popen([sys.executable, "-c", DYING_HARNESS, tag, '{"namespaces": true}'], stdout=subprocess.PIPE,
                             cwd=str(REPO))
    try:
        assert child.stdout.readline().strip() == b"running", "the child harness did not start its sandbox"
        assert started(tag), "the sandboxed candidate is not running"
        child.kill()
        child.wait()
        deadline = time.monotonic() + 30  # the kernel's teardown, slow on a loaded machine; ends once done
        while processes_named(tag) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not processes_named(tag), "sandbox processes outlived their harness"
    finally:
        child.kill()


# --- process caps --------------------------------------------------------------------------------

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


@pytest.mark.parametrize("namespaces,cap", [
    pytest.param(True, "cgroup", marks=[needs_bwrap, needs_cgroup]),
    pytest.param(True, "uid", marks=[needs_bwrap, needs_slots]),
    pytest.param(False, "cgroup", marks=needs_cgroup),
    pytest.param(False, "uid", marks=needs_slots),
])
def test_process_cap_contains_forks(namespaces, cap):
    limits = Limits(processes=8)
    with local.LocalBackend(namespaces=namespaces, process_cap=cap) as b:
        forks = answer(b, FORK_COUNT, limits=limits)
        assert isinstance(forks, int), forks
        # The cap counts the runner (and under bwrap, bwrap's two processes) too.
        assert 0 < forks < limits.processes
        assert any(f"={limits.processes}" in e for e in b.isolation(limits).enforced)


@needs_cgroup
def test_execution_cgroups_are_removed_after_close(bwrap_cgroup):
    mine = f"{cgroup.PREFIX}{os.getpid()}-"
    execute(one_case(2), FORK_COUNT, bwrap_cgroup, limits=Limits(wall_seconds=3))
    for parent in (CAPS.cgroups.pids, CAPS.cgroups.memory):
        left = [p.name for p in Path(parent).iterdir() if p.name.startswith(mine)]
        assert left == [], left


@needs_cgroup
def test_cgroups_left_by_a_dead_harness_are_swept():
    gone = subprocess.Popen(["true"])
    gone.wait()
    stale = [Path(parent) / f"{cgroup.PREFIX}{gone.pid}-0" for parent in (CAPS.cgroups.pids, CAPS.cgroups.memory)]
    for path in stale:
        path.mkdir()
    cgroup.sweep_stale(CAPS.cgroups)
    assert not any(path.exists() for path in stale)


@needs_cgroup
def test_cgroup_caps_and_reports_an_oom_kill():
    cg = cgroup.ExecutionCgroup.create(CAPS.cgroups, processes=4, memory_bytes=32 << 20)
    proc = None
    try:
        proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.readline(); b = bytearray(256 << 20)"],
                                stdin=subprocess.PIPE)
        cg.attach(proc.pid)
        assert cg.tasks() == [proc.pid]
        proc.stdin.write(b"go\n")
        proc.stdin.flush()
        assert proc.wait(timeout=20) == -signal.SIGKILL
        assert cg.oom_killed()
        assert cg.peak_memory() <= 32 << 20
    finally:
        if proc and proc.poll() is None:
            proc.kill()
        cg.remove()
    assert not cg.pids.exists() and not cg.memory.exists()


@needs_bwrap
@needs_cgroup
def test_memory_of_all_processes_is_capped_and_an_oom_kill_is_a_memory_verdict(bwrap_cgroup):
    fill = r'''
def f(x):
    held = []
    for place in ("/tmp", "/dev/shm", "/sandbox"):
        for n in range(2):
            with open(place + "/fill%d" % n, "wb") as fh:
                fh.write(b"x" * (15 << 20))
    block = bytearray(90 << 20)
    for i in range(0, len(block), 4096):
        block[i] = 1
    return 0
'''
    result = execute(one_case(2), fill, bwrap_cgroup)
    assert result.verdict == "memory" and "memory limit" in result.exit, result.as_dict()


# --- the uid-slot fallback -----------------------------------------------------------------------

@needs_slots
def test_slot_uids_are_distinct_per_concurrent_execution_and_cleaned_up():
    with local.LocalBackend(namespaces=False, process_cap="uid") as b:
        p1, p2 = b.spawn(Limits()), b.spawn(Limits())
        try:
            uids = {os.stat(f"/proc/{p.popen.pid}").st_uid for p in (p1, p2)}
            assert len(uids) == 2 and uids <= set(CAPS.uid_slots)
        finally:
            p1.close()
            p2.close()
        for uid in uids:
            assert not [e for e in os.scandir("/proc") if e.name.isdigit() and _uid_of(e) == uid
                        and not uidslots._is_zombie(e.name)]


def _uid_of(entry) -> int | None:
    try:
        return entry.stat().st_uid
    except OSError:
        return None


@needs_bwrap
def test_a_venv_interpreters_site_packages_are_hidden():
    """An interpreter whose stdlib dir holds site-packages (pyenv, venv base): the packages stay out."""
    view = hostprobe.interpreter_view(sys.executable)
    site = [h for h in view["hidden"] if h.endswith("site-packages")]
    if not site:
        pytest.skip(f"{sys.executable} keeps no site-packages under its stdlib")
    bw = hostlayers.Bwrap(path=CAPS.bwrap.path, origin="test", version="test", **view)
    listing = subprocess.run(
        bwrap.command(bw, [bw.python, "-I", "-S", "-c", f"import os; print(os.listdir({site[0]!r}))"]),
        capture_output=True, text=True, timeout=30)
    assert listing.stdout.strip() == "[]", listing.stderr[-500:]


@needs_bwrap
def test_every_extension_module_imports_inside_the_sandbox():
    """The probe's trial imports every lib-dynload module under bwrap; none may be missing."""
    assert CAPS.bwrap.notes == (), CAPS.bwrap.notes
    view = hostprobe.interpreter_view(CAPS.python)
    more = hostprobe.with_module_libraries(view, ["_sqlite3", "_ctypes", "_hashlib"])
    covered = lambda path: any(path == b or path.startswith(b + "/") for b in more["ro_binds"])  # noqa: E731
    assert all(covered(b) for b in view["ro_binds"])
