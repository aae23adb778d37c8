"""A batch's workers as processes: forked from the harness once its jobs exist, a backend each.

Why: every case is a round trip between a worker and its sandbox, and two worker threads sharing one
interpreter cost the harness a third more CPU per round trip than one (``bench/bench_samples.py
--breakdown --workers 1`` against ``--workers 2``: the GIL and the objects' cache lines move between
the CPUs). Forked workers share the jobs (the suites, the harnesses, the sources) without a copy and
run alone in their interpreters (``bench/bench_worker_processes.py``: 3-5 % off the wall time of the
HumanEval and HumanEval+ batches of ``bench_samples.py``).

How: ``map_jobs`` forks ``workers`` children. Each makes a backend of its own (``factory``: the same
sandbox as the parent's, with its own slots, uid block and cgroups), pins itself as a worker thread
would (``affinity.worker_pins``), then takes job indices one at a time from one pipe (4-byte writes of
whole indices, at most PIPE_BUF at once: every index reaches exactly one child) and sends each result
back, pickled, on a pipe of its own. Jobs are handed out as children become free, a few ahead of them
(AHEAD), in the order of the caller's queue, which may change what is not handed out yet as results
come in; a slow job does not hold the others back.

Stops: a child is in a process group of its own, which ``interrupt`` spares when it kills every
descendant at a stop (the sandboxes below it are killed all the same); the batch's loop then raises
``Interrupted`` and its ``finally`` sends the children SIGTERM, on which each ends through its own
clean-up (its sandboxes killed, no new execution, its backend closed: no cgroup left behind). A
child ignores SIGINT and also gets SIGTERM if the thread that forked it ends (PR_SET_PDEATHSIG). The
parent raises what a child raised, ``Interrupted`` when a stop was requested, and RuntimeError if a
child ended with jobs unanswered.
"""

from __future__ import annotations

import ctypes
import os
import pickle
import select
import signal
import struct
import threading
import time
from typing import Any, Callable, Sequence

from acceptgate._util import affinity, interrupt
from acceptgate._util.errors import Interrupted
from acceptgate.sandbox import cgroup
from acceptgate.sandbox.backend import ExitStatus

INDEX = struct.Struct("=I")
HEADER = struct.Struct("=IBI")  # job index (NO_JOB: none), kind, payload length
NO_JOB = 0xFFFFFFFF
RESULT, RAISED = 0, 1
PIPE_BUF = 4096  # writes this long are atomic on Linux: whole indices only
AHEAD = 2  # indices in the pipe per child, beyond the ones being run
GRACE_SECONDS = 5.0  # a child's own clean-up after SIGTERM before it is killed
PR_SET_PDEATHSIG = 1
SWEEP_SECONDS = 0.05  # a stopping child kills what is left below it this often until it ends


def available() -> bool:
    return hasattr(os, "fork") and hasattr(os, "register_at_fork") and os.uname().sysname == "Linux"


def map_jobs(call: Callable[[Any, Any], Any], jobs: Sequence[Any], queue: Any,
             factory: Callable[[], Any], workers: int,
             progress: Callable[[int, int], None] | None = None) -> list[Any]:
    """``call(job, backend)`` for every job, in ``workers`` forked children (each with ``factory()``
    as its backend), taken from ``queue`` (``take() -> index | None``, ``done(index, result)``: the
    executor's JobQueue, which may reorder what is not taken yet); results in the jobs' order."""
    interrupt.check()
    results: list[Any] = [None] * len(jobs)
    if not jobs:
        return results
    workers = max(1, min(workers, len(jobs)))
    todo_r, todo_w = os.pipe()
    children: dict[int, int] = {}  # result pipe -> pid
    try:
        _fork_children(children, call, jobs, factory, todo_r, todo_w, workers)
        os.close(todo_r)
        todo_r = -1
        left = len(jobs)
        sent = 0

        def hand_out() -> None:
            """Indices go out as results come back, at most AHEAD per child beyond those being run: the
            queue decides the order of the rest as late as it can. So few never fill the pipe (one page
            holds 1,024): each write is whole and at once."""
            nonlocal sent, todo_w
            more = []
            while todo_w >= 0 and sent + len(more) - (len(jobs) - left) < AHEAD * workers:
                index = queue.take()
                if index is None:
                    break
                more.append(index)
            data = b"".join(INDEX.pack(i) for i in more)
            sent += len(more)
            try:
                for start in range(0, len(data), PIPE_BUF):
                    os.write(todo_w, data[start:start + PIPE_BUF])
            except BrokenPipeError:  # no child reads any more: what they ended with is seen below
                sent = len(jobs)
            if todo_w >= 0 and sent == len(jobs):
                os.close(todo_w)  # the children see the end of the jobs once they have taken the last
                todo_w = -1

        buffers = {fd: bytearray() for fd in children}
        poller = select.poll()  # not select(): a harness may hold descriptors numbered past FD_SETSIZE
        for fd in buffers:
            poller.register(fd, select.POLLIN)
        while left:
            interrupt.check()  # a stop ends the batch here, as before each execution on threads
            hand_out()
            readable = [fd for fd, _ in poller.poll(500)]
            for fd in readable:
                data = os.read(fd, 1 << 20)
                if not data:
                    del buffers[fd]
                    poller.unregister(fd)
                    continue
                buf = buffers[fd]
                buf += data
                for index, kind, payload in _frames(buf):
                    if kind == RAISED:
                        raise _unpickled_error(payload, children[fd])
                    results[index] = pickle.loads(payload)
                    queue.done(index, results[index])
                    left -= 1
                    if progress:
                        progress(len(jobs) - left, len(jobs))
            if left and not buffers:  # every child has ended
                interrupt.check()
                raise RuntimeError(f"worker processes ended with {left} of {len(jobs)} jobs unanswered: "
                                   + "; ".join(_status(pid) for pid in children.values()))
        return results
    finally:
        for fd in (todo_r, todo_w, *children):
            if fd >= 0:
                os.close(fd)
        _stop(list(children.values()))
        for pid in children.values():
            interrupt.unspare(pid)


def _fork_children(children: dict[int, int], call, jobs, factory, todo_r: int, todo_w: int, workers: int) -> None:
    """``workers`` forked children reading job indices from ``todo_r``; ``children`` gets each one's
    result pipe -> pid as it starts (so a failure half-way still stops those already running)."""
    for _ in range(workers):
        out_r, out_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover (the child ends in os._exit)
            os.close(out_r)
            os.close(todo_w)
            for fd in children:
                os.close(fd)
            _child(call, jobs, factory, todo_r, out_w, workers)
        os.close(out_w)
        children[out_r] = pid
        _own_group(pid)


def _own_group(pid: int) -> None:
    """The child in a process group of its own (set on both sides of the fork: whichever runs first),
    spared by ``interrupt``'s kill of every descendant: it stops through its own clean-up, at SIGTERM
    from ``_stop`` (its sandboxes are killed at once all the same: they are in sessions of their own)."""
    try:
        os.setpgid(pid, pid)
    except (PermissionError, ProcessLookupError):  # it has set it already / it has ended
        pass
    interrupt.spare(pid)


def _frames(buf: bytearray):
    """The whole frames at the start of ``buf`` (removed from it)."""
    while len(buf) >= HEADER.size:
        index, kind, size = HEADER.unpack_from(buf)
        if len(buf) < HEADER.size + size:
            return
        payload = bytes(buf[HEADER.size:HEADER.size + size])
        del buf[:HEADER.size + size]
        yield index, kind, payload


def _unpickled_error(payload: bytes, pid: int) -> BaseException:
    try:
        exc = pickle.loads(payload)
    except Exception as problem:  # noqa: BLE001
        return RuntimeError(f"worker process {pid} failed, and its error could not be read: {problem}")
    return exc if isinstance(exc, BaseException) else RuntimeError(f"worker process {pid} failed: {exc!r}")


def _status(pid: int) -> str:
    """How a child ended (reaping it), for the error text."""
    try:
        got, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return f"{pid}: not a child"
    if got == 0:
        return f"{pid}: still running"
    return f"{pid}: " + ExitStatus(returncode=os.waitstatus_to_exitcode(status),
                                   signal=os.WTERMSIG(status) if os.WIFSIGNALED(status) else None).describe()


def _stop(pids: list[int]) -> None:
    """Reap the children; those still running get SIGTERM, then SIGKILL after GRACE_SECONDS. Then the
    cgroups of any child that ended before closing its backend (killed, or died) are removed here."""
    running = [pid for pid in pids if not _reaped(pid)]
    for pid in running:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + GRACE_SECONDS
    while running:
        running = [pid for pid in running if not _reaped(pid)]
        if running and time.monotonic() >= deadline:
            for pid in running:
                _signal(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            break
        if running:
            time.sleep(0.01)
    # Right after the reap: the kernel hands out pids in turn, so none of these names a new process yet.
    cgroup.remove_owned(pids)


def _reaped(pid: int) -> bool:
    try:
        return os.waitpid(pid, os.WNOHANG)[0] != 0
    except ChildProcessError:
        return True


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


# --- the child -------------------------------------------------------------------------------------

def _stop_requested(signum, frame) -> None:
    """SIGTERM in a child: its sandboxes are killed at once and no execution starts after the current
    one (as ``interrupt`` does in a harness); the child then closes its backend and ends. Nothing is
    raised: an exception at an arbitrary point could cut a slot's clean-up short. A slot being started
    at this moment (its process not there yet to be killed) is killed by the sweeps that follow."""
    if interrupt.request(signum):
        threading.Thread(target=_sweep, name="acceptgate-worker-stop", daemon=True).start()


def _sweep() -> None:
    while True:
        time.sleep(SWEEP_SECONDS)
        interrupt.kill_descendants()


def _child(call, jobs, factory, todo: int, out: int, workers: int) -> None:  # pragma: no cover (forked)
    code = 70
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, _stop_requested)
        os.setpgid(0, 0)  # a terminal's Ctrl-C goes to the parent's group only: the parent decides
        parent = os.getppid()
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:  # the forking thread ended before the prctl
            os._exit(code)
        pin = affinity.worker_pins(workers)
        if pin is not None:
            pin()
        index: int | None = NO_JOB
        try:
            with factory() as backend:
                while not interrupt.requested():
                    index = _next_index(todo)
                    if index is None:
                        break
                    try:
                        result = call(jobs[index], backend)
                    except Interrupted:
                        break
                    payload = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
                    _write_all(out, HEADER.pack(index, RESULT, len(payload)) + payload)
        except BrokenPipeError:  # the parent has stopped reading: it is ending the batch
            code = 0
        except BaseException as exc:  # handed to the parent, which raises it
            try:
                _write_all(out, _error_frame(index if index is not None else NO_JOB, exc))
            except OSError:
                pass
            code = 1
        else:
            code = 0
    except BaseException:
        code = 71
    if interrupt.requested():
        code = 128 + signal.SIGTERM
    os._exit(code)


def _next_index(todo: int) -> int | None:
    while True:
        try:
            raw = os.read(todo, INDEX.size)
        except InterruptedError:
            continue
        if len(raw) < INDEX.size:
            return None
        return INDEX.unpack(raw)[0]


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while len(view):
        try:
            view = view[os.write(fd, view):]
        except InterruptedError:
            continue


def _error_frame(index: int, exc: BaseException) -> bytes:
    try:
        payload = pickle.dumps(exc)
        pickle.loads(payload)
    except Exception:  # noqa: BLE001  (an exception that does not survive pickling: its text)
        payload = pickle.dumps(RuntimeError(f"in a worker process: {type(exc).__name__}: {exc}"))
    return HEADER.pack(index, RAISED, len(payload)) + payload
