"""Local backend: the runner as a child process of this one, isolated as far as the host allows.

Layers, each probed once (``hostprobe``) and named in ``isolation``:

- always: own session (the wall-clock kill takes its process group), empty environment, a fresh
  working dir, the interpreter with a fixed hash seed and no site (``backend.PYTHON_FLAGS``), and
  rlimits the runner applies to itself before the candidate loads (address space, cpu, file size, open
  files, no core);
- namespaces: the runner under bubblewrap (``bwrap.py``), in a root of its own (a fresh tmpfs, built by
  the fork server's one-shot mode: no host directory), new user/pid/net/ipc/uts/cgroup/mount
  namespaces, no capabilities;
- a process cap: a per-execution cgroup (``cgroup.py``: pids.max plus a memory cap whose OOM kills
  are reported as ``memory``), else a per-slot uid with RLIMIT_NPROC;
- as root, an unprivileged uid: bwrap itself is started as that uid, so the sandbox holds no
  root-owned credentials at all (file owner bits, the root user's keyring, signals to root's processes).

Fork-server mode (``forkserver.py``, where bubblewrap and a cgroup are available): one long-lived
sandbox per concurrent execution holding a pre-initialised interpreter; each execution is a fresh
process forked from it into fresh user/pid/mount/ipc/net/uts namespaces of its own, so no state
survives between executions, at a few milliseconds instead of tens.

Registered names: "local" = the best the host allows (fork server when it runs here; a loud warning
on stderr when namespaces or a process cap are missing), "local-forkserver" = the fork server or
BackendUnavailable, "local-bwrap" = one bubblewrap sandbox started per execution (namespaces or
BackendUnavailable), "local-rlimits" = no namespaces and no cgroup (rlimits, plus a per-slot uid
with RLIMIT_NPROC when root).
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Callable

from acceptgate.sandbox import bwrap, cgroup, forkserver, hostprobe, residency, seccomp, stdlib_image
from acceptgate.sandbox.uidslots import UidSlots, slot_pool
from acceptgate.sandbox.backend import (
    HASH_SEED, PYTHON_FLAGS, SANDBOX_ENV, Backend, BackendUnavailable, ExitStatus, Isolation, Limits, MiB, RunnerPipes,
    SandboxProcess, register, runner_source, zygote_source,
    time_limit_text,
)

NOBODY = hostprobe.SANDBOX_UID
GATE_SCRIPT = bwrap.GATE_SCRIPT


def sandbox_python() -> str:
    return hostprobe.sandbox_python()


class PipeProcess(RunnerPipes, SandboxProcess):
    """A runner started with subprocess.Popen, spoken to through its stdin/stdout pipes."""

    def __init__(self, popen: subprocess.Popen, workdir: str | None,
                 cleanup: Callable[[], None] | None = None) -> None:
        self.popen = popen
        self.workdir = workdir
        self._cleanup = cleanup
        self.open_pipes(popen.stdin.fileno(), popen.stdout.fileno())  # closed with popen's streams
        self._closed = False

    def kill(self) -> None:
        if self.popen.poll() is None:
            try:
                os.killpg(self.popen.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                self.popen.kill()
            except ProcessLookupError:
                pass

    def wait(self, timeout: float) -> ExitStatus:
        try:
            rc = self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return ExitStatus(returncode=None)
        if rc < 0:
            return ExitStatus(returncode=rc, signal=-rc)
        return ExitStatus(returncode=rc)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.kill()
        # The session may have left grandchildren (a fork bomb's survivors): end the group.
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.wait(1.0)
        for stream in (self.popen.stdin, self.popen.stdout):
            try:
                stream.close()
            except OSError:
                pass
        if self._cleanup:
            self._cleanup()
        if self.workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)


class LocalProcess(PipeProcess):
    """A PipeProcess that also owns the execution's cgroup or uid slot."""

    def __init__(self, popen: subprocess.Popen, workdir: str | None, *, under_bwrap: bool,
                 cg: cgroup.ExecutionCgroup | None, release: Callable[[], None],
                 cpu: "cgroup.CpuCgroup | cgroup.ProcessTreeCpu | None" = None) -> None:
        super().__init__(popen, workdir, cleanup=release)
        self.under_bwrap = under_bwrap
        self.cgroup = cg
        self.cpu = cpu

    def cpu_seconds(self) -> float | None:
        return self.cpu.seconds() if self.cpu is not None else None

    def run_delay(self) -> cgroup.RunDelay | None:
        if self.cgroup is not None:
            return cgroup.RunDelay(self.cgroup.tasks)
        if isinstance(self.cpu, cgroup.ProcessTreeCpu):
            return cgroup.RunDelay(self.cpu.pids)
        if isinstance(self.cpu, cgroup.CpuCgroup):
            return cgroup.RunDelay(lambda: cgroup._tasks(self.cpu.path))
        return None

    def wait(self, timeout: float) -> ExitStatus:
        status = super().wait(timeout)
        if self.under_bwrap and status.signal is None and status.returncode and status.returncode > 128:
            # bwrap exits with 128 + N when the runner was killed by signal N.
            status = ExitStatus(returncode=status.returncode, signal=status.returncode - 128)
        if status.returncode is not None and self.cgroup is not None and self.cgroup.oom_killed():
            status.oom_killed = True
        return status


@dataclass(frozen=True)
class Plan:
    namespaces: bool
    process_cap: str  # "cgroup" | "uid" | "none"


def make_workdir(owner_uid: int | None) -> str:
    workdir = tempfile.mkdtemp(prefix="acceptgate-")
    if owner_uid is not None:
        os.chown(workdir, owner_uid, owner_uid)
    os.chmod(workdir, 0o700)
    return workdir


class LocalBackend(Backend):
    """The runner as a local child process; ``namespaces`` and ``process_cap`` pick the layers.

    namespaces: True (bubblewrap, BackendUnavailable if the host refuses), False, or "auto".
    process_cap: "cgroup", "uid" (per-slot uid + RLIMIT_NPROC), "none", or "auto" (the best available).
    forkserver: True (needs namespaces and the cgroup cap; BackendUnavailable if the host refuses),
    False (a new sandbox per execution), or "auto" (when namespaces and the cgroup cap are used and a
    trial slot starts here).
    """

    def __init__(self, python: str | None = None, drop_privileges: bool | None = None, *,
                 namespaces: bool | str = False, process_cap: str = "auto", name: str | None = None,
                 forkserver: bool | str = False) -> None:
        caps = hostprobe.probe()
        self.caps = caps
        why = seccomp.problem()
        if why:
            raise BackendUnavailable(f"local sandbox unavailable: {why}")
        if drop_privileges is None:
            drop_privileges = os.geteuid() == 0
        self.uid = NOBODY if drop_privileges else None
        self.plan = _resolve(caps, namespaces, process_cap, self.uid is not None)
        # What a runner still maps once in its own root (the interpreter, its libraries, the preloaded extension
        # modules), locked in memory from the first backend until the process exits, else read in and re-checked.
        self._mapped = stdlib_image.mapped_files(caps.bwrap.python) if self.plan.namespaces else ()
        self._pin = residency.hold(self._mapped) if self.plan.namespaces else None
        self._resident()  # before any sandbox starts, the trial slot included
        self.forkserver_problem = ""
        try:
            self.pool = self._fork_server_pool(forkserver)
        except BaseException:
            residency.release(self._pin)
            raise
        self._described: dict[Limits, Isolation] = {}
        if self.plan.namespaces:
            self.python = caps.bwrap.python
        else:
            self.python = python or (caps.python if drop_privileges else sys.executable)
        self._runner = runner_source().decode("utf-8")
        self._slots = slot_pool(caps.uid_slots) if self.plan.process_cap == "uid" else None
        self.name = name or ("local" if self.plan.namespaces else "local-rlimits")
        # What a forked worker process builds again: the same layers as resolved here (not "auto")
        self._same = dict(python=python, drop_privileges=drop_privileges, namespaces=self.plan.namespaces,
                          process_cap=self.plan.process_cap, name=self.name, forkserver=self.pool is not None)

    def reopener(self) -> Callable[[], "LocalBackend"]:
        return functools.partial(LocalBackend, **self._same)

    def _fork_server_pool(self, wanted: bool | str) -> forkserver.SlotPool | None:
        if not wanted:
            self.forkserver_problem = "not requested"
            return None
        # As root, every slot runs as a host uid of its own (from this process's claimed block).
        pool = slot_pool(self.caps.uid_slots) if self.uid is not None and self.caps.uid_slots else None
        config = forkserver.SlotConfig(caps=self.caps, uid=self.uid, uid_pool=pool)
        if not self.plan.namespaces or self.plan.process_cap != "cgroup":
            why = "it needs bubblewrap namespaces and the cgroup process cap"
        else:
            why = forkserver.problem(config)
        if why:
            if wanted == "auto":
                self.forkserver_problem = why
                return None
            raise BackendUnavailable(f"fork-server sandbox unavailable: {why}")
        return forkserver.SlotPool(config)

    @property
    def pinned(self) -> residency.Pinned | None:
        """The read-only view's pages, locked in memory until the process exits (None: re-checked)."""
        return residency.held(self._pin)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
        pin, self._pin = self._pin, None
        residency.release(pin)

    def command(self, limits: Limits, seccomp_fd: int | None = None, stdlib_fd: int | None = None) -> list[str]:
        # The runner travels on the command line: no file of ours needs to be readable inside. Under
        # bubblewrap the fork server's one-shot mode starts it, in a root of its own (zygote.py once).
        inner = [self.python, *PYTHON_FLAGS, "-c", self._runner]
        if self.plan.namespaces:
            inner = [self.python, *PYTHON_FLAGS, "-c", zygote_source(), "once",
                     str(bwrap.SCRATCH_BYTES), self._runner, seccomp.bpf().hex(),
                     ",".join(stdlib_image.preload(self.python)), str(stdlib_fd)]
        script = ""
        if self.plan.process_cap == "uid":
            # RLIMIT_NPROC set by the child for itself: setting another process's limits needs
            # CAP_SYS_RESOURCE, which containers often lack. bash/ash spell it -u, dash -p.
            n = limits.processes
            script += f"ulimit -u {n} 2>/dev/null || ulimit -p {n} || exit 125; "
        if self.plan.namespaces:
            return ["/bin/sh", "-c", script + GATE_SCRIPT] + bwrap.command(self.caps.bwrap, inner, once=True)
        if script:
            return ["/bin/sh", "-c", script + 'exec "$0" "$@"'] + inner
        return inner

    def _resident(self) -> None:
        """The mapped files' pages all resident (residency.py); a no-op when checked recently."""
        if self.plan.namespaces and self._pin is None:
            residency.ensure(self._mapped)

    def spawn(self, limits: Limits) -> SandboxProcess:
        self._resident()
        if self.pool is not None:
            return self.pool.spawn(limits)
        uid = self._slots.acquire() if self._slots else self.uid
        cg = None
        cpu = None
        popen = None
        workdir = None
        filter_fd = None
        try:
            # The syscall filter: under bubblewrap the one-shot fork server loads it once it has built the
            # execution's root; without bubblewrap the runner loads it itself before the candidate's code
            # exists (see runner._apply_filter). The standard library's image comes as a sealed memfd.
            if self.plan.namespaces:
                filter_fd = stdlib_image.memfd(self.python)
            if self.plan.process_cap == "cgroup":
                cg = cgroup.ExecutionCgroup.create(self.caps.cgroups, processes=limits.processes,
                                                   memory_bytes=limits.memory_bytes)
            cpu = cgroup.CpuCgroup.create()  # the time limit's clock (None: the process tree's, below)
            workdir = None if self.plan.namespaces else make_workdir(uid)
            ids = {"user": uid, "group": uid, "extra_groups": []} if uid is not None else {}
            popen = subprocess.Popen(
                self.command(limits, stdlib_fd=filter_fd), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, cwd=workdir or "/", env=dict(SANDBOX_ENV), close_fds=True,
                pass_fds=(filter_fd,) if filter_fd is not None else (), start_new_session=True, **ids,
            )
            # The cap goes on before anything can fork: the runner waits for its first frame, and
            # under bwrap the gate shell waits for the newline written below.
            if cg:
                cg.attach(popen.pid)
            if cpu is not None:
                cpu.attach(popen.pid)
            if self.plan.namespaces:
                os.write(popen.stdin.fileno(), b"\n")
        except (OSError, stdlib_image.ImageUnavailable) as exc:
            if popen is not None:
                popen.kill()
                popen.wait()
            _release(cg, self._slots, uid, cpu)
            if workdir:
                shutil.rmtree(workdir, ignore_errors=True)
            raise BackendUnavailable(f"cannot start a local sandbox: {exc}") from exc
        finally:
            if filter_fd is not None:
                os.close(filter_fd)
        proc = LocalProcess(popen, workdir, under_bwrap=self.plan.namespaces, cg=cg,
                            release=lambda: _release(cg, self._slots, uid, cpu),
                            cpu=cpu if cpu is not None else cgroup.ProcessTreeCpu(popen.pid))
        if not self.plan.namespaces:
            proc.runner_seccomp = seccomp.bpf()
        return proc

    def isolation(self, limits: Limits) -> Isolation:
        # Described once per limits (every execution asks): a copy, so callers may change theirs.
        if limits not in self._described:
            self._described[limits] = describe(self, limits)
        iso = self._described[limits]
        return Isolation(iso.backend, list(iso.enforced), list(iso.not_enforced), list(iso.notes))


def _release(cg: cgroup.ExecutionCgroup | None, slots: UidSlots | None, uid: int | None,
             cpu: cgroup.CpuCgroup | None = None) -> None:
    if cg is not None:
        cg.remove()
    if cpu is not None:
        cpu.remove()
    if slots is not None and uid is not None:
        slots.release(uid)


def _resolve(caps: hostprobe.HostCaps, namespaces: bool | str, process_cap: str, drop: bool) -> Plan:
    if namespaces == "auto":
        namespaces = caps.bwrap is not None
    elif namespaces and caps.bwrap is None:
        raise BackendUnavailable(f"bubblewrap sandbox unavailable: {caps.bwrap_problem}")
    if process_cap == "auto":
        process_cap = ("cgroup" if caps.cgroups else "uid" if caps.uid_slots and drop else "none")
    elif process_cap == "cgroup" and caps.cgroups is None:
        raise BackendUnavailable(f"cgroup process cap unavailable: {caps.cgroup_problem}")
    elif process_cap == "uid" and (caps.uid_slots is None or not drop):
        why = caps.uid_problem or "privileges are not dropped"
        raise BackendUnavailable(f"per-slot uid process cap unavailable: {why}")
    elif process_cap not in ("cgroup", "uid", "none"):
        raise ValueError(f"process_cap must be cgroup, uid, none or auto, not {process_cap!r}")
    return Plan(namespaces=bool(namespaces), process_cap=process_cap)


CPU_COUNTER = "a cpuacct cgroup of the execution's own, read by the harness"
TREE_COUNTER = "the runner's process tree in /proc, read by the harness"
TREE_GAP = ("CPU time of every process (no cpuacct cgroup here: a child that ends outside the runner's tree "
            "is not counted; the wall-clock backstop bounds it)")

ROOT_TEXT = ("filesystem: a root of its own per execution (a fresh tmpfs: /proc of its pid namespace, pids only; "
             "/sandbox, /tmp, /dev/shm; the five device nodes, one file each), moved into before the candidate's code "
             "exists: no host directory can be named, so no filesystem cache (dentries, pages) of one execution is "
             "another's; the standard library served from memory, its extension modules preloaded")


def page_cache(backend: "LocalBackend") -> str:
    """What keeps the page cache of the host files a runner still maps from carrying anything."""
    if backend.pinned is not None:
        return (f"page cache of the host files a runner still maps (the interpreter, its libraries, the preloaded "
                f"extension modules): all {backend.pinned.bytes // MiB} MiB mapped and locked in memory by the harness "
                "before any candidate runs, until the harness exits, so no execution can load a page another one could "
                "see, nor anyone (the host included) evict one")
    return ("page cache of the host files a runner still maps: every one read in by the harness before any "
            f"candidate runs and re-checked every {residency.REFRESH_SECONDS:g} s, so no page is left for an execution "
            "to load, and none it can evict (the evicting and probing calls are denied; pages the host "
            "evicts between two checks can be loaded again)")


def describe(backend: LocalBackend, limits: Limits) -> Isolation:
    if backend.pool is not None:
        return describe_fork_server(backend, limits)
    caps, plan = backend.caps, backend.plan
    iso = Isolation(backend=backend.name)
    iso.enforced.append("separate process (own session; wall-clock kill of its process group)")
    if plan.namespaces:
        outside = ("a per-slot uid" if plan.process_cap == "uid" else
                   str(backend.uid) if backend.uid is not None else "the harness's uid")
        iso.enforced += bwrap.describe(caps.bwrap, outside_uid=outside)
        iso.enforced.append(seccomp.describe() + " (loaded by bubblewrap before the runner starts)")
        iso.enforced.append(page_cache(backend))
        iso.notes += list(caps.bwrap.notes)
        iso.notes.append(f"a new sandbox and interpreter per execution (fork server: {backend.forkserver_problem})")
    else:
        iso.enforced += ["empty environment", "fresh temp dir as cwd",
                         seccomp.describe() + " (loaded by the runner before the candidate's code exists)"]
    iso.enforced += [
        f"rlimit address space {limits.memory_bytes // MiB} MiB beyond what the runner maps before the candidate loads",
        f"rlimit cpu {limits.cpu_seconds} s",
        f"rlimit file size {limits.file_bytes // MiB} MiB",
        f"rlimit open files {limits.open_files}",
        "no core dumps",
        time_limit_text(limits, CPU_COUNTER if cgroup.cpuacct_parent() else TREE_COUNTER),
    ]
    if not cgroup.cpuacct_parent():
        iso.not_enforced.append(TREE_GAP)
    if plan.process_cap == "cgroup":
        swap = " including swap" if caps.cgroups.memsw else ""
        iso.enforced += [f"process cap: cgroup pids.max={limits.processes}",
                         f"memory cap: cgroup {limits.memory_bytes // MiB} MiB for all its processes{swap}"]
    elif plan.process_cap == "uid":
        iso.enforced.append(f"process cap: per-slot uid with RLIMIT_NPROC={limits.processes}")
        why = caps.cgroup_problem or "not requested"
        iso.not_enforced.append(f"memory cap for all processes together (no cgroup: {why})")
    else:
        iso.not_enforced.append("process count cap (no cgroup, no per-slot uid: "
                                "a fork bomb is not contained)")
        iso.not_enforced.append("memory cap for all processes together (no cgroup)")
    if backend.uid is not None and not plan.namespaces:
        who = "per-slot uid" if plan.process_cap == "uid" else f"uid {backend.uid}"
        iso.enforced.append(f"unprivileged {who} (cannot signal or ptrace the harness, "
                            "nor read its environ or memory)")
    elif backend.uid is None and not plan.namespaces:
        iso.not_enforced.append("separate uid (runs as the harness's user: can signal it)")
    if not plan.namespaces:
        reason = caps.bwrap_problem or "not requested"
        iso.not_enforced += [
            f"namespaces ({reason})",
            "network namespace (none: the host's network is only kept out by the syscall filter, which "
            "denies socket())",
            "filesystem (no mount namespace: world-readable files outside the temp dir are visible, "
            "world-writable ones can be changed, files left in world-writable dirs may survive the "
            "execution)",
            "process visibility (no pid namespace: other processes' /proc entries are visible)",
            "page cache residency of host files (every host file is readable: a read by one execution can "
            "load pages whose read time a later one measures; the syscall filter denies every call that "
            "evicts or probes them)",
            "dentry cache of host directories (every host directory can be looked into: a name one execution "
            "looks up, present or absent, stays cached for a later one to find, by openat2 RESOLVE_CACHED or "
            "a stat's time; no outcome of a hidden suite reaches an execution to be noted there)",
        ]
    return iso


def describe_fork_server(backend: LocalBackend, limits: Limits) -> Isolation:
    """What the fork-server mode enforces: the slot's sandbox, and what each execution gets fresh."""
    caps = backend.caps
    iso = Isolation(backend=backend.name)
    if backend.pool.config.uid_pool is not None:
        r = caps.uid_slots
        outside = f"a host uid of its own per slot ({r.start}..{r.stop - 1}, claimed by this harness)"
    else:
        outside = str(backend.uid) if backend.uid is not None else "the harness's uid"
    scratch = bwrap.SCRATCH_BYTES // MiB
    iso.enforced += [
        "fork server: every execution is a fresh process forked from a pre-initialised interpreter "
        "(trusted, started before any candidate) in a long-lived per-slot sandbox; pid 1 of the "
        "execution's namespace ends with the runner and takes every process left with it",
        f"namespaces: user, pid, net, ipc, uts, cgroup, mount (bubblewrap {caps.bwrap.version.split()[-1]}, "
        f"{caps.bwrap.origin}, per slot) and fresh user, pid, mount, ipc, uts namespaces for every "
        "execution; no nested user namespaces (user.max_user_namespaces=0)",
        f"uid 65534 inside, {outside} outside the sandbox; all capabilities dropped (every set, "
        "no_new_privs)",
        "network: none (the slot's empty network namespace, loopback only: nothing to connect to; its "
        "executions use it one at a time, and before it builds each execution's environment the fork "
        "server checks that it holds no socket, or the slot is discarded)",
        ROOT_TEXT,
        f"writable: private tmpfs cwd {bwrap.WORKDIR}, /tmp and /dev/shm, {scratch} MiB each, new for every "
        "execution",
        "processes: private /proc (pids only) of the execution's own pid namespace (harness, fork server and "
        "other executions invisible; its init non-dumpable and immune to its signals)",
        "environment: cleared; new session; dies with the harness",
        f"rlimit address space {limits.memory_bytes // MiB} MiB beyond what the runner maps before the candidate loads",
        f"rlimit cpu {limits.cpu_seconds} s",
        f"rlimit file size {limits.file_bytes // MiB} MiB",
        f"rlimit open files {limits.open_files}",
        "no core dumps",
        time_limit_text(limits, "the slot's cpuacct cgroup, read by the harness" if cgroup.cpuacct_parent() else ""),
        f"process cap: cgroup pids.max={limits.processes} for the execution (the slot's cgroup; its limit "
        f"adds the slot's {forkserver.RESIDENT_PROCESSES} resident processes)",
        f"memory cap: cgroup {limits.memory_bytes // MiB} MiB for all its processes"
        + (" including swap" if caps.cgroups.memsw else "")
        + " (the slot's cgroup, which also holds the fork server; OOM kills counted per execution)",
    ]
    iso.enforced.append(seccomp.describe() + " (loaded by each execution's init after its namespaces are "
                        "built, before the runner is forked)")
    iso.enforced.append(page_cache(backend))
    if backend.pool.config.uid_pool is None:
        iso.not_enforced.append("a host uid per slot (not root: every slot runs as the harness's uid, so "
                                "concurrent executions share its per-user kernel quotas)")
    iso.notes += list(caps.bwrap.notes)
    iso.notes.append("shared by the executions of one slot, fixed when the slot starts: the interpreter's "
                     "memory layout (ASLR), the standard modules it pre-imported; the string-hash seed is "
                     f"{HASH_SEED} on every backend (PYTHONHASHSEED)")
    return iso


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    # The one place this library writes to stderr: a sandbox weaker than asked for must not go unseen.
    if message not in _warned:
        _warned.add(message)
        print(f"\n*** acceptgate WARNING: {message} ***\n", file=sys.stderr, flush=True)


def best_local(**options) -> LocalBackend:
    """The strongest local isolation this host allows, loudly saying what is missing."""
    options.setdefault("namespaces", "auto")
    options.setdefault("process_cap", "auto")
    options.setdefault("forkserver", "auto")
    backend = LocalBackend(name="local", **options)
    caps = backend.caps
    if not backend.plan.namespaces:
        _warn_once("the local sandbox runs WITHOUT namespaces (rlimits only): candidates can read "
                   "world-readable files, connect to the network and see other processes. "
                   f"Reason: {caps.bwrap_problem or 'privileges not dropped'}")
    if backend.plan.process_cap == "none":
        _warn_once(f"the local sandbox has NO process cap: a fork bomb is not contained. "
                   f"Reason: {caps.cgroup_problem}; {caps.uid_problem}")
    return backend


def bwrap_local(**options) -> LocalBackend:
    return LocalBackend(name="local-bwrap", namespaces=True, **options)


def forkserver_local(**options) -> LocalBackend:
    options.setdefault("process_cap", "cgroup")
    return LocalBackend(name="local-forkserver", namespaces=True, forkserver=True, **options)


def rlimits_local(**options) -> LocalBackend:
    options.setdefault("process_cap", "uid" if hostprobe.probe().uid_slots else "none")
    return LocalBackend(name="local-rlimits", namespaces=False, **options)


register("local", best_local)
register("local-bwrap", bwrap_local)
register("local-forkserver", forkserver_local)
register("local-rlimits", rlimits_local)
