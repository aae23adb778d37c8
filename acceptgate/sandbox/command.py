"""Run one command in the local sandbox: bytes in on stdin, bounded stdout and exit status out.

The candidate runner (``runner.py``) speaks a framed protocol; an external verifier is any program
the user gives (``v4v/external.py``), so it gets this plain path instead, with the same isolation as
a candidate under the local backend it is given (``local.LocalBackend``):

- with namespaces: a fresh bubblewrap sandbox per run (``bwrap.command``: read-only view of the
  interpreter, private tmpfs cwd, /tmp and /dev/shm, no network, new user/pid/ipc/uts/cgroup/mount
  namespaces, no capabilities, cleared environment), the seccomp deny list loaded by bubblewrap, plus
  read-only binds of the files the command needs (``mounts``) and of a fresh host dir ``/input``
  holding the input files;
- always: own session (the wall-clock kill takes the group), empty environment, rlimits set by the
  gate shell before bubblewrap or the command starts (address space, cpu, file size, open files, no
  core), the per-execution cgroup (pids + memory) or per-slot uid the backend uses, an unprivileged
  uid as root;
- without namespaces (``local-rlimits``): the command sees the host's files and network and loads no
  syscall filter; ``isolation`` names what is missing, as it does for candidates.

Fork-server slots only fork the pre-initialised runner, so a command always gets a sandbox of its
own (tens of milliseconds more per run). Docker is not supported here: BackendUnavailable.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass

from acceptgate._util import interrupt
from acceptgate.sandbox import bwrap, cgroup, seccomp
from acceptgate.sandbox.backend import BackendUnavailable, ExitStatus, Isolation, Limits, MiB
from acceptgate.sandbox.local import GATE_SCRIPT, LocalBackend, _release, make_workdir

INPUT_DIR = "/input"  # where the input files appear inside a namespaced sandbox
STDOUT_BYTES = 64 * 1024  # what is kept of a command's stdout; more is a malformed answer
STDERR_BYTES = 4 * 1024  # the tail of stderr kept for the receipt


@dataclass
class CommandResult:
    returncode: int | None
    signal: int | None
    timed_out: bool
    oom_killed: bool
    stdout: bytes  # at most STDOUT_BYTES
    stdout_overflow: bool  # the command printed more than STDOUT_BYTES
    stderr_tail: bytes
    seconds: float

    def describe(self) -> str:
        if self.timed_out:
            return "no answer within the wall clock"
        return ExitStatus(self.returncode, self.signal, self.oom_killed).describe()


def input_dir(backend: LocalBackend) -> str | None:
    """Where the input files are, as the command sees them (None: a fresh host dir per run)."""
    return INPUT_DIR if backend.plan.namespaces else None


def _ulimits(limits: Limits) -> str:
    # dash's ulimit takes one resource per call; -v and -f in KiB and 512-byte blocks respectively.
    settings = (("-c", 0), ("-n", limits.open_files), ("-f", max(1, limits.file_bytes // 512)),
                ("-t", limits.cpu_seconds), ("-v", limits.memory_bytes // 1024))
    return "".join(f"ulimit {flag} {value} || exit 125; " for flag, value in settings)


def _check(backend) -> LocalBackend:
    if not isinstance(backend, LocalBackend):
        raise BackendUnavailable(f"commands run on the local backends only, not on {getattr(backend, 'name', backend)!r}")
    return backend


def run_command(backend: LocalBackend, argv: list[str], stdin: bytes, limits: Limits, *,
                mounts: tuple[str, ...] = (), files: dict[str, bytes] | None = None) -> CommandResult:
    """Run ``argv`` in a fresh sandbox of ``backend``; ``files`` (name -> content) are written to the
    input dir (``input_dir``, or the run's own host dir when the backend has no namespaces, where
    the placeholder ``{input}`` in argv is replaced by that dir); ``mounts`` are host paths bound
    read-only at the same path."""
    interrupt.check()  # after SIGINT / SIGTERM no new sandbox starts
    backend = _check(backend)
    plan = backend.plan
    uid = backend._slots.acquire(timeout=60) if backend._slots else backend.uid
    cg = None
    filter_fd = None
    popen = None
    host_dir = tempfile.mkdtemp(prefix="acceptgate-cmd-")
    workdir = None
    try:
        os.chmod(host_dir, 0o755)  # the sandbox uid reads the input files, it never writes them
        for name, content in (files or {}).items():
            path = os.path.join(host_dir, name)
            with open(path, "wb") as f:
                f.write(content)
            os.chmod(path, 0o644)
        where = INPUT_DIR if plan.namespaces else host_dir
        inner = [a.replace("{input}", where) for a in argv]
        script = _ulimits(limits)
        if plan.process_cap == "uid":
            script += f"ulimit -u {limits.processes} 2>/dev/null || ulimit -p {limits.processes} || exit 125; "
        if plan.namespaces:
            filter_fd = seccomp.memfd()
            binds = tuple((m, m) for m in mounts) + ((host_dir, INPUT_DIR),)
            full = ["/bin/sh", "-c", script + GATE_SCRIPT] + bwrap.command(
                backend.caps.bwrap, inner, seccomp_fd=filter_fd, extra_ro_binds=binds, env={})
        else:
            workdir = make_workdir(uid)
            full = ["/bin/sh", "-c", script + GATE_SCRIPT] + inner
        if plan.process_cap == "cgroup":
            cg = cgroup.ExecutionCgroup.create(backend.caps.cgroups, processes=limits.processes,
                                               memory_bytes=limits.memory_bytes)
        ids = {"user": uid, "group": uid, "extra_groups": []} if uid is not None else {}
        started = time.monotonic()
        popen = subprocess.Popen(full, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 cwd=workdir or "/", env={}, close_fds=True,
                                 pass_fds=(filter_fd,) if filter_fd is not None else (),
                                 start_new_session=True, **ids)
        if cg:
            cg.attach(popen.pid)  # before the gate line: nothing has forked yet
        return _talk(popen, b"\n" + stdin, limits.wall_seconds, started, cg)
    except OSError as exc:
        raise BackendUnavailable(f"cannot start a command sandbox: {exc}") from exc
    finally:
        if filter_fd is not None:
            os.close(filter_fd)
        if popen is not None:
            _end(popen)
        _release(cg, backend._slots, uid if backend._slots else None)
        shutil.rmtree(host_dir, ignore_errors=True)
        if workdir:
            shutil.rmtree(workdir, ignore_errors=True)


def _talk(popen: subprocess.Popen, data: bytes, wall: float, started: float, cg) -> CommandResult:
    """Feed stdin, keep a bounded stdout and a stderr tail, stop at the wall clock."""
    deadline = started + wall
    out, err = bytearray(), bytearray()
    overflow = timed_out = False
    pending = memoryview(data)
    fin, fout, ferr = popen.stdin.fileno(), popen.stdout.fileno(), popen.stderr.fileno()
    for fd in (fin, fout, ferr):
        os.set_blocking(fd, False)
    readers, writer = {fout, ferr}, fin
    while readers:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            timed_out = True
            break
        ready_r, ready_w, _ = select.select(list(readers), [writer] if writer is not None else [], [], remaining)
        if ready_w:
            try:
                n = os.write(writer, pending[:65536])
                pending = pending[n:]
            except BlockingIOError:
                pass
            except (BrokenPipeError, OSError):
                pending = pending[:0]  # the command stopped reading: what it did not read is its choice
            if not pending:
                popen.stdin.close()
                writer = None
        for fd in ready_r:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                continue
            if not chunk:
                readers.discard(fd)
            elif fd == fout:
                if len(out) + len(chunk) > STDOUT_BYTES:
                    overflow = True
                    out += chunk[: STDOUT_BYTES - len(out)]
                    timed_out = False
                    readers.clear()  # no reason to read on: the answer is malformed
                    break
                out += chunk
            else:
                err = (err + chunk)[-STDERR_BYTES:]
    if timed_out or overflow:
        _kill(popen)
    try:
        rc = popen.wait(timeout=max(0.1, deadline - time.monotonic()) if not (timed_out or overflow) else 5)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill(popen)
        rc = popen.wait(5)
    sig = -rc if rc is not None and rc < 0 else None
    if sig is None and rc is not None and rc > 128 and rc - 128 < 65:
        sig = rc - 128  # bwrap (and the shell) exit with 128 + N when the command was killed by N
    oom = bool(cg and cg.oom_killed())
    return CommandResult(rc, sig, timed_out, oom, bytes(out), overflow, bytes(err), time.monotonic() - started)


def _kill(popen: subprocess.Popen) -> None:
    try:
        os.killpg(popen.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _end(popen: subprocess.Popen) -> None:
    _kill(popen)
    try:
        popen.wait(2)
    except subprocess.TimeoutExpired:
        pass
    for stream in (popen.stdin, popen.stdout, popen.stderr):
        try:
            if stream:
                stream.close()
        except OSError:
            pass


def isolation(backend: LocalBackend, limits: Limits, mounts: tuple[str, ...]) -> Isolation:
    """What a command run enforces: the backend's description, adjusted where commands differ."""
    backend = _check(backend)
    caps, plan = backend.caps, backend.plan
    iso = Isolation(backend=f"{backend.name} (command)")
    iso.enforced.append("separate process (own session; wall-clock kill of its process group)")
    if plan.namespaces:
        iso.enforced += bwrap.describe(caps.bwrap, outside_uid=str(backend.uid) if backend.uid is not None
                                       else "the harness's uid")
        iso.enforced.append(seccomp.describe() + " (loaded by bubblewrap before the command starts)")
        iso.enforced.append("read-only binds: " + (", ".join(mounts) or "none") + f"; input files at {INPUT_DIR}")
        iso.notes.append("a new sandbox per command run (fork-server slots only run the candidate runner)")
    else:
        iso.enforced += ["empty environment", "fresh temp dir as cwd"]
        iso.not_enforced += [f"namespaces ({caps.bwrap_problem or 'not requested'}): the command sees the "
                             "host's files and network", "the seccomp deny list (loaded by the candidate "
                             "runner itself, which a command does not use)"]
    iso.enforced += [f"rlimit address space {limits.memory_bytes // MiB} MiB", f"rlimit cpu {limits.cpu_seconds} s",
                     f"rlimit file size {limits.file_bytes // MiB} MiB", f"rlimit open files {limits.open_files}",
                     "no core dumps", f"wall clock {limits.wall_seconds:g} s",
                     f"stdout kept up to {STDOUT_BYTES // 1024} KiB (more is a malformed answer)"]
    if plan.process_cap == "cgroup":
        iso.enforced.append(f"cgroup pids.max={limits.processes}, memory {limits.memory_bytes // MiB} MiB")
    elif plan.process_cap == "uid":
        iso.enforced.append(f"per-slot uid with RLIMIT_NPROC={limits.processes}")
    else:
        iso.not_enforced.append("process count and total memory caps (no cgroup, no per-slot uid)")
    return iso
