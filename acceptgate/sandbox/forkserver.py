"""Fork-server mode of the local backend: long-lived sandboxes, a fresh process and namespaces per execution.

Starting a sandboxed interpreter per execution costs tens of milliseconds (a bubblewrap sandbox, a
cgroup move, an interpreter start). Here each *slot* (one per concurrent execution) is one bubblewrap
sandbox started once, holding a trusted fork server (``zygote.py``) that has already imported the
runner. Each execution is a fresh process forked from it, in a fresh set of user, pid, mount, ipc,
net and uts namespaces made for that execution alone: new tmpfs cwd, /tmp and /dev/shm, a new /proc,
no capabilities, no nested user namespaces. When the execution's runner ends, the execution's init
(pid 1 of its namespace) exits, which kills every process left in it; the namespaces -- files, IPC
objects, sockets, even the pid counter -- go with them. Kernel keyrings do not: they belong to the
host uid, outside every namespace, so the seccomp filter (``seccomp.py``, loaded by each execution's
init) denies the keyring calls, and as root each slot runs as a host uid of its own, so executions
running at once share no per-user quota either. The candidate never sees the fork server (another pid
namespace), holds none of its descriptors and cannot ptrace the execution's init (non-dumpable,
pid-namespace init).

The harness talks to the runner over fresh pipes passed to the fork server per execution, and learns
the runner's exit status from the execution's init on a separate status pipe. It holds a pidfd of
that init: killing it ends the execution; it becomes readable once every process of the execution
is gone. Caps: the slot's cgroup (pids + memory) holds the whole sandbox, its limits are set per
execution and its OOM-kill counter is compared per execution.

A slot that misbehaves -- the fork server killed, stopped, slow to answer, an execution that would
not die -- is discarded (every process in its cgroup killed) and a new one started; a slot is never
reused on doubt.
"""

from __future__ import annotations

import array
import atexit
import os
import select
import signal
import socket
import struct
import subprocess
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from queue import SimpleQueue
from typing import Callable

from acceptgate._util import affinity, forksafe
from acceptgate.sandbox import bwrap, cgroup, hostprobe, seccomp, stdlib_image
from acceptgate.sandbox.backend import (PYTHON_FLAGS, BackendUnavailable, ExitStatus, Limits, RunnerPipes,
                                        SandboxProcess, runner_source, zygote_source)

# Processes of a slot that are not the execution's: bwrap, bwrap's init and the fork server (the
# next execution's environment is built only after the current one has ended). pids.max = the
# execution's cap + these; the execution's own init counts against its cap.
RESIDENT_PROCESSES = 3
START_SECONDS = 30.0  # a slot's first start (bubblewrap + interpreter); generous on a loaded host
ANSWER_SECONDS = 10.0  # the fork server's answer to a run request
GONE_SECONDS = 5.0  # for every process of an ended execution to be gone


class SlotBroken(Exception):
    """The slot cannot be trusted or used any more; it is discarded."""


# --- descriptors ----------------------------------------------------------------------------------

def _send(sock: socket.socket, data: bytes, fds: list[int] = ()) -> None:
    anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
    sock.sendmsg([data], anc)


def _recv(sock: socket.socket, timeout: float, maxfds: int = 1) -> tuple[bytes, list[int]]:
    ready, _, _ = select.select([sock], [], [], timeout)
    if not ready:
        raise TimeoutError
    fds = array.array("i")
    data, ancdata, _, _ = sock.recvmsg(4096, socket.CMSG_SPACE(maxfds * fds.itemsize), socket.MSG_CMSG_CLOEXEC)
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    return data, list(fds)


def _close(*fds: int) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def _readable(fd: int, timeout: float) -> bool:
    return bool(select.select([fd], [], [], max(0.0, timeout))[0])


# --- starting sandboxes from one long-lived thread -------------------------------------------------

class _Spawner:
    """Runs Popen for slots on one daemon thread.

    bubblewrap's --die-with-parent is PR_SET_PDEATHSIG, which fires when the *thread* that forked
    it ends -- and executions run in short-lived pool threads.
    """

    def __init__(self) -> None:
        self._jobs: SimpleQueue = SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def call(self, fn: Callable[[], object]) -> object:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="acceptgate-slot-spawner", daemon=True)
                self._thread.start()
        done: Future = Future()
        self._jobs.put((fn, done))
        return done.result()

    def _loop(self) -> None:
        affinity.unpin()  # started by whichever thread came first: the slots it starts may run anywhere
        while True:
            fn, done = self._jobs.get()
            try:
                done.set_result(fn())
            except BaseException as exc:  # handed to the caller
                done.set_exception(exc)


_spawner = _Spawner()

_exit_sweep_pid: int | None = None


def _remove_own_cgroups_at_exit() -> None:
    """Once per process that starts a pool: at interpreter exit, the slots' cgroups of a pool nobody
    closed are removed, with anything still in them (``close`` removes them earlier; this is the net)."""
    global _exit_sweep_pid
    if _exit_sweep_pid != os.getpid():
        _exit_sweep_pid = os.getpid()
        atexit.register(lambda: cgroup.remove_owned([os.getpid()]))


forksafe.renew_in_child(globals(), _spawner=_Spawner)  # the parent's spawner thread is not in the child


# --- one slot ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SlotConfig:
    caps: hostprobe.HostCaps
    uid: int | None  # the host uid bubblewrap runs as (None: ours), unless uid_pool gives one per slot
    # acquire() -> uid / release(uid): a host uid of its own for each slot while it lives (root only), so
    # that per-user kernel state (pipe-buffer and key quotas, inotify/epoll counts) is never shared by
    # two executions running at once; release() kills whatever still runs as that uid.
    uid_pool: object | None = field(default=None, compare=False, hash=False)
    scratch_bytes: int = bwrap.SCRATCH_BYTES
    start_seconds: float = START_SECONDS
    answer_seconds: float = ANSWER_SECONDS


class Slot:
    """One bubblewrap sandbox with its fork server, its cgroup and its control socket."""

    def __init__(self, config: SlotConfig, limits: Limits) -> None:
        self.config = config
        self.limits = limits
        self.popen: subprocess.Popen | None = None
        self.ctl: socket.socket | None = None
        self.cgroup: cgroup.ExecutionCgroup | None = None
        self.cpu: cgroup.CpuCgroup | None = None  # counts the slot's CPU time (the time limit's clock)
        self.uses = 0
        pool = config.uid_pool
        self.uid = pool.acquire(timeout=config.start_seconds) if pool is not None else config.uid
        self._uid_held = pool is not None
        self._start()

    def _start(self) -> None:
        caps = self.config.caps
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.ctl = ours
        stdlib = None
        try:
            self.cgroup = cgroup.ExecutionCgroup.create(
                caps.cgroups, processes=self.limits.processes + RESIDENT_PROCESSES,
                memory_bytes=self.limits.memory_bytes, slot=True)
            self.cpu = cgroup.CpuCgroup.create(slot=True)
            stdlib = stdlib_image.memfd(caps.bwrap.python)
            inner = [caps.bwrap.python, *PYTHON_FLAGS, "-c", zygote_source(), str(theirs.fileno()),
                     str(self.config.scratch_bytes), runner_source().decode("utf-8"), seccomp.bpf().hex(),
                     ",".join(stdlib_image.preload(caps.bwrap.python)), str(stdlib)]
            argv = ["/bin/sh", "-c", bwrap.GATE_SCRIPT] + bwrap.command(
                caps.bwrap, inner, scratch_bytes=self.config.scratch_bytes, zygote=True)
            self.popen = _spawner.call(lambda: self._popen(argv, (theirs.fileno(), stdlib)))
        except (OSError, cgroup.CgroupError, seccomp.SeccompUnavailable, stdlib_image.ImageUnavailable) as exc:
            self.discard()
            raise BackendUnavailable(f"cannot start a fork-server sandbox: {exc}") from exc
        finally:
            theirs.close()
            if stdlib is not None:
                os.close(stdlib)
        try:
            reply, _ = _recv(self.ctl, self.config.start_seconds, 0)
        except (TimeoutError, OSError) as exc:
            reply = f"no answer ({type(exc).__name__})".encode()
        if reply != b"ready":
            self.discard()
            raise SlotBroken(f"fork server did not start: {reply.decode('utf-8', 'replace')[:200]}")

    def _popen(self, argv: list[str], fds: tuple[int, ...]) -> subprocess.Popen:
        uid = self.uid
        ids = {"user": uid, "group": uid, "extra_groups": []} if uid is not None else {}
        popen = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, cwd="/", env={}, close_fds=True, pass_fds=fds,
                                 start_new_session=True, **ids)
        try:
            self.cgroup.attach(popen.pid)  # before the gate opens: nothing escapes the caps
            if self.cpu is not None:
                self.cpu.attach(popen.pid)
            popen.stdin.write(b"\n")
            popen.stdin.close()
        except OSError:
            popen.kill()
            popen.wait()
            raise
        return popen

    def healthy(self) -> bool:
        """Alive and silent: the fork server never speaks unasked, so anything readable is EOF or wrong."""
        return (self.popen is not None and self.popen.poll() is None and self.ctl is not None
                and not _readable(self.ctl.fileno(), 0))

    def run(self, limits: Limits) -> "ForkServerProcess":
        if limits != self.limits:
            try:
                self.cgroup.set_limits(processes=limits.processes + RESIDENT_PROCESSES,
                                       memory_bytes=limits.memory_bytes)
            except OSError as exc:  # e.g. a memory cap below what the slot holds: a new slot gets it
                raise SlotBroken(f"cannot change the slot's caps: {exc}") from exc
            self.limits = limits
        affinity.follow(self, self.host_pids)  # on its caller's CPU: each case's wake-ups stay on one CPU
        oom_before = self.cgroup.oom_count()
        # Runner stdin, runner stdout, status: fresh pipes for every execution.
        to_r, to_w = os.pipe2(os.O_CLOEXEC)
        from_r, from_w = os.pipe2(os.O_CLOEXEC)
        status_r, status_w = os.pipe2(os.O_CLOEXEC)
        try:
            _send(self.ctl, b"run", [to_r, from_w, status_w])
            reply, fds = _recv(self.ctl, self.config.answer_seconds)
        except (OSError, TimeoutError) as exc:
            _close(to_w, from_r, status_r)
            raise SlotBroken(f"fork server did not answer: {type(exc).__name__}") from exc
        finally:
            _close(to_r, from_w, status_w)
        if reply != b"started" or len(fds) != 1:
            _close(to_w, from_r, status_r, *fds)
            raise SlotBroken(f"fork server refused: {reply.decode('utf-8', 'replace')[:200]}")
        self.uses += 1
        return ForkServerProcess(self, to_w, from_r, status_r, fds[0], oom_before)

    def discard(self) -> None:
        """Kill everything in the slot (its cgroup holds it all) and release it. Idempotent."""
        if self.cgroup is not None:
            self.cgroup.kill_all()
        if self.popen is not None:
            try:
                self.popen.kill()
            except OSError:
                pass
            try:
                self.popen.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        if self.ctl is not None:
            self.ctl.close()
            self.ctl = None
        if self.cgroup is not None:
            try:
                self.cgroup.remove()
            except (OSError, cgroup.CgroupError):
                pass
            self.cgroup = None
        if self.cpu is not None:
            self.cpu.remove()
            self.cpu = None
        self.popen = None
        if self._uid_held:
            self._uid_held = False
            self.config.uid_pool.release(self.uid)

    def host_pids(self) -> list[int]:
        """Every process of the slot, as host pids (for tests and diagnostics)."""
        return self.cgroup.tasks() if self.cgroup else []

    def zygote_pid(self) -> int | None:
        """The fork server's host pid (for tests and diagnostics): the slot's process whose parent is
        bubblewrap's init (the executions' inits are the fork server's children)."""
        for pid in self.host_pids():
            try:
                ppid = int(open(f"/proc/{pid}/stat").read().rpartition(")")[2].split()[1])
                with open(f"/proc/{ppid}/comm") as f:
                    parent = f.read().strip()
                with open(f"/proc/{pid}/comm") as f:
                    me = f.read().strip()
            except (OSError, ValueError, IndexError):
                continue
            if parent == "bwrap" and me.startswith("python"):
                return pid
        return None


# --- one execution ----------------------------------------------------------------------------------

class ForkServerProcess(RunnerPipes, SandboxProcess):
    """One execution in a slot: the runner's pipes, the status pipe and a pidfd of the execution's init."""

    def __init__(self, slot: Slot, to_runner: int, from_runner: int, status: int, pidfd: int, oom_before: int) -> None:
        self.slot = slot
        self.open_pipes(to_runner, from_runner)
        self._status, self._pidfd = status, pidfd
        self._oom_before = oom_before
        self._exit: ExitStatus | None = None
        self._closed = False
        self._release: Callable[[Slot, int], None] | None = None

    def cpu_seconds(self) -> float | None:
        # The slot's cgroup: while an execution runs, the fork server and bubblewrap's init only wait
        # (the next environment is built after it has ended), so this is the execution's CPU time.
        cpu = self.slot.cpu
        return cpu.seconds() if cpu is not None else None

    def run_delay(self) -> cgroup.RunDelay | None:
        # The slot's processes: the fork server and bubblewrap's wait while an execution runs.
        return cgroup.RunDelay(self.slot.host_pids) if self.slot.cgroup is not None else None

    def kill(self) -> None:
        """SIGKILL the execution's init: the kernel then kills every process in its namespace."""
        if self._pidfd >= 0:
            try:
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
            except (ProcessLookupError, OSError):
                pass

    def wait(self, timeout: float) -> ExitStatus:
        if self._exit is not None:
            return self._exit
        if not _readable(self._status, timeout):
            return ExitStatus(returncode=None)
        raw = b""
        while len(raw) < 4:
            chunk = os.read(self._status, 4 - len(raw))
            if not chunk:
                break
            raw += chunk
        if len(raw) == 4:
            status = struct.unpack("=i", raw)[0]
            if os.WIFSIGNALED(status):
                sig = os.WTERMSIG(status)
                exit_status = ExitStatus(returncode=-sig, signal=sig)
            else:
                exit_status = ExitStatus(returncode=os.WEXITSTATUS(status))
        else:  # the init ended without a report: it was killed (by us, or by the OOM killer)
            exit_status = ExitStatus(returncode=-signal.SIGKILL, signal=signal.SIGKILL)
        if self.slot.cgroup is not None and self.slot.cgroup.oom_count() > self._oom_before:
            exit_status.oom_killed = True
        self._exit = exit_status
        return exit_status

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.kill()
        self.close_pipes()
        _close(self._status)
        pidfd, self._pidfd = self._pidfd, -1
        if self._release is not None:  # the pool waits for the end, off this thread (SlotPool.ended)
            self._release(self.slot, pidfd)
            return
        _readable(pidfd, GONE_SECONDS)
        _close(pidfd)


# --- the pool of slots -------------------------------------------------------------------------------

class SlotPool:
    """Slots of one backend; a slot serves one execution at a time.

    An ended execution's slot is not reusable until every process of that execution is gone (its
    init's pidfd readable: the kernel has killed and reaped them and released their namespaces) and
    its fork server has built the next environment. That takes milliseconds of mostly waiting, so
    the harness does not wait for it: ``ended`` puts the slot among the ending ones, and the next
    ``spawn`` looks at their pidfds (one poll, no wait) and returns those that are gone to the idle
    list (discarding any still there after GONE_SECONDS), then takes the slot idle longest. No thread
    of the pool's own: a watcher thread woke twice per execution. Once the pool has served WARM_UP
    executions it may keep one slot more per execution running at once, so that a busy run never
    waits for a teardown; before that, or at that size, the next execution waits for an ending slot
    instead. Nothing is shared between slots but the host's kernel: each is its own sandbox, cgroup
    and uid.
    """

    WARM_UP = 32  # executions before the pool grows past one slot per concurrent execution

    def __init__(self, config: SlotConfig, *, max_idle: int | None = None) -> None:
        self.config = config
        if config.caps.cgroups is not None:
            # a harness killed outside our control (SIGKILL, OOM) cannot remove its slots' cgroups: each
            # new pool does, so they last only until the next run on this host
            cgroup.sweep_stale(config.caps.cgroups, strict=False)
            _remove_own_cgroups_at_exit()
        self.max_idle = max_idle or 2 * (os.cpu_count() or 1)
        self._idle: list[Slot] = []
        self._ending: dict[int, tuple[Slot, float]] = {}  # pidfd of an ended execution's init -> (slot, deadline)
        self._lock = threading.Condition()
        self._closed = False
        self._running = 0  # executions in flight
        self._peak = 0  # the most executions in flight at once so far
        self._served = 0
        # One thread at a time polls the ending pidfds (and closes those it is done with); while it
        # waits, an ended() of another thread wakes it through this pipe so that it polls that one too.
        self._collecting = False
        self._waiting = False
        self._wake_r, self._wake_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self.started = 0  # slots started so far (diagnostics)
        self.discarded = 0

    def spawn(self, limits: Limits) -> ForkServerProcess:
        problems = []
        for _ in range(3):
            slot = self._take()
            try:
                if slot is None:
                    slot = Slot(self.config, limits)
                    with self._lock:
                        self.started += 1
                proc = slot.run(limits)
            except SlotBroken as exc:
                problems.append(str(exc))
                if slot is not None:
                    self._discard(slot)
                continue
            proc._release = self.ended
            with self._lock:
                self._running += 1
                self._served += 1
                self._peak = max(self._peak, self._running)
            return proc
        raise BackendUnavailable("fork-server sandbox failed three times: " + "; ".join(problems))

    def _take(self) -> Slot | None:
        """The slot idle longest (its next environment most likely built); else, while a new slot would
        not pay for itself, the next one to finish its teardown; else None (start one)."""
        deadline = time.monotonic() + GONE_SECONDS + 1.0
        wait = 0.0  # the first look at the ending slots does not wait
        while True:
            self._collect(wait)
            with self._lock:
                if self._idle:
                    slot = self._idle.pop(0)
                elif self._ending and not self._closed and not self._may_grow() and time.monotonic() < deadline:
                    wait = deadline - time.monotonic()
                    continue
                else:
                    return None
            if slot.healthy():
                return slot
            self._discard(slot)
            wait = 0.0

    def _may_grow(self) -> bool:
        alive = self._running + len(self._ending) + len(self._idle)
        return self._served >= self.WARM_UP and alive < 2 * self._peak and alive < self.max_idle

    def ended(self, slot: Slot, pidfd: int) -> None:
        """An execution of ``slot`` is over (its init killed); ``pidfd`` is the init's."""
        with self._lock:
            self._running -= 1
            closed = self._closed
            if not closed:
                self._ending[pidfd] = (slot, time.monotonic() + GONE_SECONDS)
                self._wake()
        if closed:
            _close(pidfd)
            self._discard(slot)

    def _wake(self) -> None:
        """(Under the lock.) A thread waiting in _collect looks again now; nothing when none waits."""
        if self._waiting:
            try:
                os.write(self._wake_w, b"x")
            except BlockingIOError:  # wake-ups pending already
                pass

    def _collect(self, wait: float) -> None:
        """Ending slots whose execution is gone back to the idle list (discarded when the pool is
        closed or full), those ending for longer than GONE_SECONDS discarded; waits up to ``wait``
        seconds for one to be gone when none is yet (and nothing else changed meanwhile)."""
        with self._lock:
            while self._collecting:  # another thread is looking: its result is ours too
                if wait <= 0 or not self._lock.wait(wait):
                    return
                wait = 0.0
            if not self._ending:
                return
            if self._closed:  # close() takes what is ending: one look, no wait
                wait = 0.0
            self._collecting = True
            self._waiting = wait > 0
            fds = list(self._ending)
            soonest = min(limit for _, limit in self._ending.values())
        try:
            poll = select.poll()
            for fd in fds:
                poll.register(fd, select.POLLIN)
            if wait > 0:
                poll.register(self._wake_r, select.POLLIN)
            timeout = min(wait, max(0.0, soonest - time.monotonic()))
            ready = {fd for fd, _ in poll.poll(timeout * 1000 + 1 if timeout > 0 else 0)}
            if self._wake_r in ready:
                try:
                    os.read(self._wake_r, 4096)
                except BlockingIOError:
                    pass
            now = time.monotonic()
            gone: list[tuple[Slot, bool]] = []
            with self._lock:
                for fd in fds:
                    slot, limit = self._ending[fd]  # only the collecting thread removes entries
                    if fd in ready or now >= limit:
                        del self._ending[fd]
                        _close(fd)
                        kept = fd in ready and not self._closed and len(self._idle) < self.max_idle
                        if kept:
                            self._idle.append(slot)
                        gone.append((slot, kept))
        finally:
            with self._lock:
                self._collecting = self._waiting = False
                self._lock.notify_all()  # threads waiting for a slot, or for another's look
        for slot, kept in gone:
            if not kept:
                self._discard(slot)

    def _discard(self, slot: Slot) -> None:
        slot.discard()
        with self._lock:
            self.discarded += 1

    def idle_slots(self) -> list[Slot]:
        """Idle slots, after waiting for every ended execution's slot to be back (or discarded)."""
        deadline = time.monotonic() + GONE_SECONDS + 1.0
        while True:
            with self._lock:
                if not self._ending or time.monotonic() >= deadline:
                    return list(self._idle)
            self._collect(deadline - time.monotonic())

    def close(self) -> None:
        """Discard every slot not running an execution, those still tearing down included (killing
        whatever of theirs is left); a running execution's slot when it ends."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            self._wake()  # a thread waiting for an ending slot stops at once: a stop is quick
        for slot in idle:
            self._discard(slot)
        with self._lock:
            # Another thread's look at the ending slots (woken above) ends first: it owns their pidfds.
            looked = self._lock.wait_for(lambda: not self._collecting, GONE_SECONDS + 1.0)
            left, self._ending = (self._ending, {}) if looked else ({}, self._ending)
            # nothing polls it from now on: ended() discards at once, and nothing is ending
            wake, self._wake_r, self._wake_w = (self._wake_r, self._wake_w), -1, -1
        for fd, (slot, _) in left.items():
            self._discard(slot)
            _close(fd)
        if looked:  # (else a look that outlived its deadline still holds them: never seen, never closed twice)
            _close(*wake)


# --- does it work here? ------------------------------------------------------------------------------

_checked: dict[tuple, str] = {}
_check_lock = threading.Lock()
forksafe.renew_in_child(globals(), _check_lock=threading.Lock)


def problem(config: SlotConfig) -> str:
    """Why the fork server cannot run on this host ("" when it can): one real slot, started once per process."""
    key = (config.caps.bwrap, config.caps.cgroups, config.uid)
    with _check_lock:
        if key not in _checked:
            _checked[key] = _trial(config)
        return _checked[key]


def _trial(config: SlotConfig) -> str:
    if config.caps.bwrap is None:
        return f"no bubblewrap ({config.caps.bwrap_problem})"
    if config.caps.cgroups is None:
        return f"no cgroup ({config.caps.cgroup_problem})"
    if not hasattr(os, "pidfd_open") or not hasattr(signal, "pidfd_send_signal"):
        return "no pidfd support in this Python/kernel"
    try:
        slot = Slot(replace(config, start_seconds=min(config.start_seconds, 60.0)), Limits())
    except (SlotBroken, BackendUnavailable) as exc:
        return str(exc)
    slot.discard()
    return ""
