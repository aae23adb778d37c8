"""The Docker backend against a real engine.

Without a reachable engine these tests skip with the reason -- except under CI (CI=true), where that
is a failure. If dockerd is installed but not running (and we are root), the session starts one with
scripts/dockerd.sh and stops it at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from acceptgate.suites import render, suitespec
from acceptgate.sandbox import backend as backends
from acceptgate.sandbox.backend import BackendUnavailable, Limits
from acceptgate.sandbox.executor import execute, run_calls

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[1]
DOCKERD_SCRIPT = REPO / "scripts" / "dockerd.sh"


def _dockerd(action: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(DOCKERD_SCRIPT), action], capture_output=True, text=True, timeout=180)


@pytest.fixture(scope="session")
def docker_engine():
    from acceptgate.sandbox.docker_backend import available

    ok, why = available()
    started = False
    if not ok and shutil.which("dockerd") and os.geteuid() == 0:
        proc = _dockerd("start")
        started = proc.returncode == 0
        ok, why = available()
        if not ok:
            why += f" (scripts/dockerd.sh start said: {proc.stderr.strip()[-500:]})"
    if not ok:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the Docker tests against a real engine: {why}")
        pytest.skip(f"no Docker engine: {why}")
    yield
    if started:
        _dockerd("stop")


@pytest.fixture(scope="module")
def docker(docker_engine):
    with backends.create("docker", pool_size=2) as b:
        yield b


@pytest.fixture()
def solo(docker_engine):
    """A one-container pool: consecutive executions provably share the container."""
    with backends.create("docker", pool_size=1) as b:
        yield b


def harness(entry: str, cases: list[tuple[tuple, object]]):
    return render.harness_for(suitespec.build("python-call/1", entry, [(a, {}, w) for a, w in cases]))


ADD = harness("add", [((1, 2), 3), ((2, 2), 4), ((-1, 1), 0)])
ONE = harness("f", [((1,), 1)])
SHORT = Limits(wall_seconds=2)


def run(backend, source: str, h=ONE, limits: Limits = Limits()):
    return execute(h, source, backend, limits=limits)


def run_while(backend, act):
    """An execution that sleeps 8 s, with ``act(engine client)`` done to its container after 1 s."""
    import threading

    import docker as sdk

    client = sdk.from_env()
    try:
        timer = threading.Timer(1.0, lambda: act(client))
        timer.start()
        r = run(backend, "import time\ndef f(x):\n    time.sleep(8)\n    return x\n")
        timer.join()
    finally:
        client.close()
    return r


# -- verdicts -------------------------------------------------------------------------------------
def test_pass_and_fail_verdicts(docker):
    good = run(docker, "def add(a, b):\n    return a + b\n", ADD)
    bad = run(docker, "def add(a, b):\n    return a - b\n", ADD)
    assert good.verdict == "pass" and good.cases_passed == 3
    assert good.isolation["backend"] == "docker"
    assert bad.verdict == "fail"
    assert bad.first_failure.got == "-1" and bad.first_failure.want == "3"


@pytest.mark.parametrize("channel", ("socket", "attach"))
def test_without_a_fork_server_each_runner_is_exec_d_on_either_channel(docker_engine, channel):
    """fork_server=False: no runner is made ahead; on the socket each one gets the harness's pipes at
    its start (fork + exec with them), on attach the keeper's, relayed."""
    if channel == "socket" and os.geteuid() != 0:
        pytest.skip("the socket is given to the container's uid: needs root")
    from acceptgate.sandbox.docker_backend import DockerBackend

    with DockerBackend(pool_size=1, fork_server=False, channel=channel) as b:
        for _ in range(2):  # the second in the same container
            good = run(b, "def add(a, b):\n    return a + b\n", ADD)
            bad = run(b, "def add(a, b):\n    return a - b\n", ADD)
            assert good.verdict == "pass" and good.cases_passed == 3
            assert bad.verdict == "fail" and bad.first_failure.got == "-1"
        assert b.pool.channel_in_use == channel and b.pool.started == 1
        assert not b.pool._idle[0].hello["fork_server"]


def test_isolation_names_what_docker_enforced(docker):
    enforced = " | ".join(docker.isolation(Limits()).enforced)
    for item in ("network none", "memory 128 MiB", "pids limit", "read-only root", "capabilities dropped",
                 "no-new-privileges", "non-root", "tmpfs", "seccomp: denied (EPERM) keyctl"):
        assert item in enforced


def test_stdlib_extension_modules_load(docker):
    # lib-dynload modules need their own shared libraries in the image (libsqlite3, libffi, ...).
    src = ("import sqlite3, ctypes, hashlib, decimal, json\n"
           "def f(x):\n"
           "    db = sqlite3.connect(':memory:')\n"
           "    return db.execute('select ?', (x,)).fetchone()[0]\n")
    assert run(docker, src).verdict == "pass"


# -- containment ----------------------------------------------------------------------------------
def test_network_is_none(docker):
    """No socket at all (the syscall filter denies socket()); and were one made, nothing to reach."""
    src = ("import socket\n"
           "def f(x):\n"
           "    try:\n"
           "        socket.socket()\n"
           "    except PermissionError:\n"
           "        return x\n"
           "    return 'a socket was made'\n")
    r = run(docker, src)
    assert r.verdict == "pass", r.cases


def test_network_interfaces_are_loopback_only(docker):
    src = ("def f(x):\n"
           "    return sorted(l.split(':')[0].strip() for l in open('/proc/self/net/dev').read().splitlines()[2:])\n")
    r = run(docker, src)
    assert r.first_failure.got == "['lo']"


def test_one_gib_allocation_is_memory(docker):
    r = run(docker, "def f(x):\n    b = bytearray(1 << 30)\n    return x\n")
    assert r.verdict == "memory"


def _forking(parent_allocates: bool) -> str:
    """Three children of 60 MiB each (and the parent too, or not): each process stays under the
    address-space rlimit; together they exceed the container's 128 MiB."""
    return ("import os, time\n"
            "def f(x):\n"
            "    for _ in range(3):\n"
            "        if os.fork() == 0:\n"
            "            b = bytearray(60 << 20); time.sleep(10); os._exit(0)\n"
            + ("    b = bytearray(60 << 20)\n" if parent_allocates else "") +
            "    time.sleep(10)\n"
            "    return x\n")


def test_container_memory_limit_kills_as_memory(docker):
    r = run(docker, _forking(parent_allocates=True), limits=Limits(wall_seconds=8))
    assert r.verdict == "memory", (r.verdict, r.detail)


def test_an_oom_killed_child_makes_a_timeout_memory(docker):
    # Only the children allocate: the kernel kills one of them and the runner sleeps on past the wall
    # clock. The memory limit was hit, so the verdict is memory, as if the runner had been killed.
    # (A sleep uses no CPU: the wall-clock backstop is what runs out, set here to the 4 s it tests.)
    sleepy = Limits(wall_seconds=4, backstop_seconds=4)
    r = run(docker, _forking(parent_allocates=False), limits=sleepy)
    assert r.verdict == "memory", (r.verdict, r.detail)
    assert r.wall_seconds >= 4.0  # it ran into the clock: the OOM kill, not an exit, decided
    # the importers' run_calls reads the clock the same way (a reference's OOM goes to the memory retry)
    got, detail = run_calls("f", [((1,), {})], _forking(parent_allocates=False), docker, limits=sleepy)
    assert [o.status for o in got] == ["memory"] and "memory limit" in got[0].message, (got, detail)


def test_infinite_loop_times_out_and_container_is_clean_after(solo):
    r = run(solo, "def f(x):\n    while True:\n        pass\n", limits=SHORT)
    assert r.verdict == "timeout" and r.timeout_clock == "cpu", r.as_dict()
    assert 2.0 <= r.cpu_seconds < 4.0  # the limit is on the container's CPU time (the load stretches the wall)
    after = run(solo, "import os\ndef f(x):\n    return sorted(os.listdir('/proc'))[:0] or x\n")
    assert after.verdict == "pass"


def test_root_is_read_only_and_cwd_is_writable(docker):
    src = ("import os\n"
           "def f(x):\n"
           "    for path in ('/x', '/usr/lib/x', '/etc/passwd'):\n"
           "        try:\n"
           "            open(path, 'w').write('1')\n"
           "            return 'wrote ' + path\n"
           "        except OSError as e:\n"
           "            if e.errno not in (2, 13, 30):  # /usr/lib, /etc: not in an execution's own root at all\n"
           "                return str(e)\n"
           "    open('here.txt', 'w').write('ok')\n"
           "    open('/tmp/t.txt', 'w').write('ok')\n"
           "    return x if open('here.txt').read() == 'ok' and os.getcwd() == '/sandbox' else -1\n")
    r = run(docker, src)
    assert r.verdict == "pass", r.cases


def test_runs_as_nobody_without_capabilities(docker):
    src = ("def f(x):\n"
           "    import os\n"
           "    status = open('/proc/self/status').read()\n"
           "    caps = [l.split()[1] for l in status.splitlines() if l.startswith(('CapEff', 'CapPrm', 'CapBnd'))]\n"
           "    nnp = [l.split()[1] for l in status.splitlines() if l.startswith('NoNewPrivs')]\n"
           "    return [os.getuid(), os.getgid(), caps, nnp]\n")
    got = run(docker, src).first_failure.got
    # As root each container runs as a host uid of its own (the harness's claimed block), else 65534.
    shared = any(e.startswith("non-root uid 65534") for e in docker.isolation(Limits()).enforced)
    uid = 65534 if shared else int(got[1:].split(",")[0])
    assert uid == 65534 or uid >= 2_000_000_000, got
    assert got == f"[{uid}, {uid}, ['0000000000000000', '0000000000000000', '0000000000000000'], ['1']]"


# -- nothing survives between executions ----------------------------------------------------------
READER = ("import os\n"
          "def f(x):\n"
          "    pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())\n"
          "    return [os.listdir('/sandbox'), os.listdir('/tmp'), [p for p in pids if p not in (1, os.getpid())]]\n")


def fork_server_pids(backend) -> list[int]:
    """The keeper's fork server (its pid in the container, which no execution sees: each has a pid
    namespace of its own)."""
    return [wc.hello["fork_server"] for wc in backend.pool._idle if wc.hello.get("fork_server")]


def test_no_file_survives_between_executions(solo):
    writer = ("import os\n"
              "def f(x):\n"
              "    open('/sandbox/left.txt', 'w').write('secret')\n"
              "    open('/tmp/left.txt', 'w').write('secret')\n"
              "    os.mkdir('/tmp/locked'); open('/tmp/locked/x', 'w').write('1'); os.chmod('/tmp/locked', 0)\n"
              "    return x\n")
    assert run(solo, writer).verdict == "pass"
    started = solo.pool.started
    r = run(solo, READER)
    assert r.first_failure.got == "[[], [], []]"  # a root and a pid namespace of its own: only its init
    assert solo.pool.started == started  # the same warm container served both: cleaned, not replaced


def test_no_process_survives_between_executions(solo):
    writer = ("import os, time\n"
              "def f(x):\n"
              "    pid = os.fork()\n"
              "    if pid == 0:\n"
              "        os.setsid(); time.sleep(60)\n"
              "    return pid\n")
    survivor = int(run(solo, writer).first_failure.got)
    assert survivor > 1
    after = run(solo, READER).first_failure.got
    assert after == "[[], [], []]"
    assert str(survivor) not in after


def test_interpreter_state_does_not_carry_over(solo):
    # Runners are forked from a pre-initialised interpreter: what one candidate changes in modules,
    # builtins or the environment must not be there for the next.
    tamper = ("import os, sys, builtins, json\n"
              "def f(x):\n"
              "    json.dumps = lambda *a, **k: 'tampered'\n"
              "    builtins.len = lambda o: 42\n"
              "    sys.modules['planted'] = sys\n"
              "    os.environ['PLANTED'] = '1'\n"
              "    return x\n")
    probe = ("import os, sys, json\n"
             "def f(x):\n"
             "    return [json.dumps(1), len('ab'), 'planted' in sys.modules, dict(os.environ)]\n")
    assert run(solo, tamper).verdict == "pass"
    started = solo.pool.started
    assert run(solo, probe).first_failure.got == "['1', 2, False, {}]"
    assert solo.pool.started == started and fork_server_pids(solo)  # same container, fork server on


def test_keeper_cannot_be_signalled_or_traced(solo):
    src = ("import os, signal\n"
           "def f(x):\n"
           "    for sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGSTOP):\n"
           "        os.kill(1, sig)\n"
           "    for path in ('/proc/1/mem', '/proc/1/environ'):\n"
           "        try:\n"
           "            open(path, 'rb').read(1)\n"
           "            return 'read ' + path\n"
           "        except OSError:\n"
           "            pass\n"
           "    try:\n"
           "        os.listdir('/proc/1/fd')\n"
           "        return 'listed keeper fds'\n"
           "    except OSError:\n"
           "        return x\n")
    first = run(solo, src)
    assert first.verdict == "pass", first.cases
    started = solo.pool.started
    assert run(solo, "def f(x):\n    return x\n").verdict == "pass"
    assert solo.pool.started == started  # the keeper survived: same container served the next run


def test_fork_bomb_is_contained_by_pids_limit(solo):
    limits = Limits(wall_seconds=5, processes=16)
    bomb = ("import os, time\n"
            "def f(x):\n"
            "    n = 0\n"
            "    while True:\n"
            "        try:\n"
            "            pid = os.fork()\n"
            "        except OSError:\n"
            "            return n\n"
            "        if pid == 0:\n"
            "            time.sleep(60); os._exit(0)\n"
            "        n += 1\n")
    r = run(solo, bomb, limits=limits)
    got = int(r.first_failure.got)
    assert 0 < got < limits.processes  # the runner + its children stay under the cap
    after = run(solo, "import os\ndef f(x):\n    return len([p for p in os.listdir('/proc') if p.isdigit()])\n")
    # the execution's init and this runner (its own pid namespace): the bomb's children are gone
    assert after.first_failure.got == "2"


def test_backend_close_removes_pooled_containers(docker_engine):
    import docker as sdk

    with backends.create("docker", pool_size=1) as b:
        run(b, "def f(x):\n    return x\n")
        ids = [wc.id for wc in b.pool._idle]
    assert ids
    client = sdk.from_env()
    try:
        for cid in ids:
            with pytest.raises(sdk.errors.NotFound):
                client.containers.get(cid)
    finally:
        client.close()


def test_a_vanished_container_is_a_crash_and_is_replaced(solo):
    import docker as sdk

    assert run(solo, "def f(x):\n    return x\n").verdict == "pass"
    victim = solo.pool._idle[0].id
    r = run_while(solo, lambda client: client.api.remove_container(victim, force=True))
    assert r.verdict == "crash" and r.wall_seconds < 6, (r.verdict, r.detail)
    # an idle container that vanished is replaced transparently
    assert run(solo, "def f(x):\n    return x\n").verdict == "pass"
    client = sdk.from_env()
    try:
        client.api.remove_container(solo.pool._idle[0].id, force=True)
    finally:
        client.close()
    assert run(solo, "def f(x):\n    return x\n").verdict == "pass"


# -- the keeper's channel ----------------------------------------------------------------------------
CHANNELS = ("socket", "attach")
HOLD_ONE = """
import sys, time
from acceptgate.sandbox.docker_backend import DockerBackend
b = DockerBackend(pool_size=1, channel=sys.argv[1])
b.warm(count=1)
print(b.pool._idle[0].id, flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="the socket is given to the container's uid: needs root")
def test_auto_takes_the_socket_on_this_machine_and_leaves_nothing_to_reach(docker_engine):
    """The keeper's socket has no name left once it is connected, and the runner holds only its own
    pipes (the harness's, passed by the keeper): no socket, so nothing of the keeper's channel."""
    with backends.create("docker", pool_size=1) as b:
        probe = ("import os, stat\n"
                 "def f(x):\n"
                 "    found = []\n"
                 "    try:\n"
                 "        found += os.listdir('/run/acceptgate-keeper')\n"
                 "    except OSError:\n"
                 "        pass\n"
                 "    try:\n"
                 "        os.stat('/run/acceptgate-keeper/keeper.sock')\n"
                 "        found.append('keeper.sock')\n"
                 "    except OSError:\n"
                 "        pass\n"
                 "    for fd in map(int, os.listdir('/proc/self/fd')):\n"
                 "        try:\n"
                 "            mode = os.fstat(fd).st_mode\n"
                 "        except OSError:\n"
                 "            continue\n"
                 "        if stat.S_ISSOCK(mode):\n"
                 "            found.append(fd)\n"
                 "    return found or x\n")
        assert run(b, probe).verdict == "pass"
        wc = b.pool._idle[0]
        assert b.pool.channel_in_use == wc.channel == "socket"
        assert wc.channel_dir and not os.path.exists(wc.channel_dir)  # the host's name is gone too
        assert any("keeper channel: a unix socket" in n for n in b.isolation(Limits()).notes)


@pytest.mark.skipif(os.geteuid() != 0, reason="the socket is given to the container's uid: needs root")
def test_a_refused_socket_mount_falls_back_to_attach(docker_engine, monkeypatch):
    import docker.types

    from acceptgate.sandbox.docker import pool

    # the engine on another machine: the directory it is asked to mount does not exist there
    monkeypatch.setattr(pool.SocketChannel, "mount", lambda self: docker.types.Mount(
        pool.SOCKET_DIR, self.dir + "-elsewhere", type="bind", read_only=True))
    with backends.create("docker", pool_size=1) as b:
        assert b.pool.channel_in_use == "socket"
        assert run(b, "def f(x):\n    return x\n").verdict == "pass"
        assert b.pool.channel_in_use == "attach"
    with pytest.raises(BackendUnavailable, match="cannot mount the keeper's socket directory"):
        with backends.create("docker", pool_size=1, channel="socket") as b:
            run(b, "def f(x):\n    return x\n")


@pytest.mark.skipif(os.geteuid() != 0, reason="the socket is given to the container's uid: needs root")
def test_a_socket_path_too_long_for_an_address_falls_back_to_attach(docker_engine, tmp_path, monkeypatch):
    import tempfile

    long_dir = tmp_path / ("d" * 100)
    long_dir.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(long_dir))
    with backends.create("docker", pool_size=1) as b:
        assert run(b, "def f(x):\n    return x\n").verdict == "pass"
        assert b.pool.channel_in_use == "attach"
    assert not any(long_dir.iterdir())  # no directory left behind
    with pytest.raises(BackendUnavailable, match="longer than a unix socket address allows"):
        with backends.create("docker", pool_size=1, channel="socket") as b:
            run(b, "def f(x):\n    return x\n")


@pytest.mark.parametrize("channel", CHANNELS)
def test_the_container_goes_when_the_harness_is_killed(docker_engine, channel):
    import time

    import docker as sdk

    if channel == "socket" and os.geteuid() != 0:
        pytest.skip("the socket is given to the container's uid: needs root")
    proc = subprocess.Popen([sys.executable, "-c", HOLD_ONE, channel], stdout=subprocess.PIPE, text=True)
    try:
        cid = proc.stdout.readline().strip()
        assert cid, "the holder printed no container id"
    finally:
        proc.kill()  # SIGKILL: no cleanup of its own runs
        proc.wait()
    client = sdk.from_env()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                client.containers.get(cid)
            except sdk.errors.NotFound:
                return
            time.sleep(0.2)
        pytest.fail(f"container {cid[:12]} outlived its harness ({channel})")
    finally:
        client.close()


@pytest.mark.parametrize("channel", CHANNELS)
def test_a_container_killed_mid_execution_is_a_crash_on_either_channel(docker_engine, channel):
    if channel == "socket" and os.geteuid() != 0:
        pytest.skip("the socket is given to the container's uid: needs root")
    with backends.create("docker", pool_size=1, channel=channel) as b:
        assert run(b, "def f(x):\n    return x\n").verdict == "pass"
        victim = b.pool._idle[0].id
        r = run_while(b, lambda client: client.api.kill(victim))
        assert r.verdict == "crash" and r.wall_seconds < 6, (r.verdict, r.detail)
        assert run(b, "def f(x):\n    return x\n").verdict == "pass"
        assert b.pool.channel_in_use == channel


def test_a_container_runs_on_its_workers_cpu_and_an_unpinned_caller_gets_every_cpu(docker, monkeypatch):
    import secrets

    from acceptgate._util import affinity
    from acceptgate._util.parallel import parallel_map

    prefix = f"acceptgate-test-{secrets.token_hex(6)}-"  # not other test processes' claims
    monkeypatch.setattr(affinity, "claims_prefix", lambda: prefix)

    cpus = sorted(affinity.process_cpus())
    if len(cpus) < 2:
        pytest.skip("pins need two CPUs")
    probe = "import os\ndef f(x):\n    return sorted(os.sched_getaffinity(0))\n"

    def mask(_):
        r = run(docker, probe)
        return r.first_failure.got, affinity.current()

    for got, cpu in parallel_map(mask, range(6), workers=2, pin=True):
        assert got == str([cpu])
    assert [mask(0)[0] for _ in range(3)] == [str(cpus)] * 3  # the same containers, from this thread


# -- prerequisites and command line ---------------------------------------------------------------
def test_missing_engine_says_how_to_start_one(monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    with pytest.raises(BackendUnavailable, match="scripts/dockerd.sh start"):
        backends.create("docker")
    from acceptgate.sandbox.docker_backend import available

    ok, why = available()
    assert not ok and "scripts/dockerd.sh" in why


def test_cli_exec_with_docker_backend(docker_engine, tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"dialect": "python-call/1", "entry_point": "add",
                                "cases": [{"args": "[1, 2]", "expected": "3"},
                                          {"args": "[5, -5]", "expected": "0"}]}))
    candidate = tmp_path / "cand.py"
    candidate.write_text("def add(a, b):\n    return a + b\n")
    proc = subprocess.run([sys.executable, "-m", "acceptgate.cli", "exec", "--spec", str(spec),
                           "--candidate", str(candidate), "--backend", "docker"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["verdict"] == "pass"
    assert result["isolation"]["backend"] == "docker"
    assert result["cases_passed"] == 2


def test_cli_sandbox_info(docker_engine):
    proc = subprocess.run([sys.executable, "-m", "acceptgate.cli", "sandbox", "info"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)["backends"]["docker"]
    assert info["available"] is True and info["engine"]["server_version"]
    assert info["image"] and info["image"].startswith("acceptgate-sandbox:")
    if not os.environ.get("ACCEPTGATE_SANDBOX_IMAGE"):  # the backend's own rootfs image, listed
        assert info["current_rootfs_image"] == info["image"] and info["image"] in info["images"]
    assert any("network none" in e for e in info["isolation"]["enforced"])


def test_listings_survive_containers_removed_while_they_list(docker, monkeypatch):
    """Other processes' pools remove their containers at any moment, also between our listing of the
    labelled containers and the inspection of each (CI once failed `sandbox info` there). `sandbox info`
    and `remove_stale` skip what is gone; `remove_stale` still removes only containers of dead owners."""
    from acceptgate.sandbox.docker import engine, pool
    from acceptgate.cli.sandbox_cmd import docker_info

    client = engine.connect()
    node = os.uname().nodename

    def labelled(owner: str):
        return client.containers.create(docker.image, command=["true"],
                                        labels={pool.LABEL: "test", f"{pool.LABEL}.owner": owner})

    def remove_after_next_listing(victim):
        listing = client.api.containers

        def list_then_remove(*args, **kwargs):
            rows = listing(*args, **kwargs)
            client.api.containers = listing
            victim.remove(force=True)  # after the listing, before any inspection
            return rows
        client.api.containers = list_then_remove

    dead = f"{node}:{2 ** 22 + 1}"  # above the kernel's largest pid_max: never a live process
    live = labelled(f"{node}:{os.getpid()}")
    try:
        monkeypatch.setattr(engine, "connect", lambda: client)
        remove_after_next_listing(labelled(dead))
        info = docker_info(Limits())
        assert info["available"] is True
        assert live.short_id in {c["id"] for c in info["containers"]}

        stale = labelled(dead)
        remove_after_next_listing(labelled(dead))
        assert pool.remove_stale(client) >= 1
        ids = {c["Id"] for c in client.api.containers(all=True, filters={"label": pool.LABEL})}
        assert stale.id not in ids and live.id in ids
    finally:
        live.remove(force=True)
