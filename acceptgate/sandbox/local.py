"""Local backend: the runner as a child process of this one.

Always: a separate process in its own session (so the wall-clock kill takes its whole process group),
an empty environment, a fresh temp dir as cwd, ``python -I -S -B``, and rlimits the runner applies to
itself before the candidate loads. As root, the candidate also runs as an unprivileged uid, so it
cannot signal or ptrace the harness or read root-only files. Namespaces (bubblewrap) and a process cap
are layered on in ``isolation.py`` when the host allows them.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from acceptgate.sandbox.backend import (
    Backend, ExitStatus, Isolation, Limits, SandboxProcess, register, runner_source,
)

NOBODY = 65534


def runner_path() -> str:
    return str(Path(__file__).with_name("runner.py"))


def sandbox_python() -> str:
    """An interpreter the unprivileged sandbox user can run: the system's, else our own.

    The runner needs only the standard library, and a pyenv/venv interpreter under /root is not
    readable by an unprivileged uid.
    """
    for candidate in ("/usr/bin/python3.11", "/usr/bin/python3", sys.executable):
        path = os.path.realpath(candidate)
        if os.path.isfile(path) and os.stat(path).st_mode & 0o001:
            return candidate
    return sys.executable


class PipeProcess(SandboxProcess):
    """A runner started with subprocess.Popen, spoken to through its stdin/stdout pipes."""

    def __init__(self, popen: subprocess.Popen, workdir: str | None, cleanup=None) -> None:
        self.popen = popen
        self.workdir = workdir
        self._cleanup = cleanup
        self._in = popen.stdin.fileno()
        self._out = popen.stdout.fileno()
        os.set_blocking(self._in, False)
        os.set_blocking(self._out, False)
        self._closed = False

    def write(self, data: bytes, deadline: float) -> None:
        view = memoryview(data)
        while view:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            _, ready, _ = select.select([], [self._in], [], remaining)
            if not ready:
                raise TimeoutError
            try:
                n = os.write(self._in, view)
            except BlockingIOError:
                continue
            view = view[n:]

    def read(self, deadline: float) -> bytes:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self._out], [], [], remaining)
            if not ready:
                raise TimeoutError
            try:
                return os.read(self._out, 1 << 20)
            except BlockingIOError:
                continue

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


def make_workdir(owner_uid: int | None) -> str:
    workdir = tempfile.mkdtemp(prefix="acceptgate-")
    if owner_uid is not None:
        os.chown(workdir, owner_uid, owner_uid)
    os.chmod(workdir, 0o700)
    return workdir


class LocalBackend(Backend):
    """Process isolation with rlimits; no namespaces (see ``isolation.BwrapBackend`` for those)."""

    name = "local-rlimits"

    def __init__(self, python: str | None = None, drop_privileges: bool | None = None) -> None:
        self.python = python or (sandbox_python() if drop_privileges is not False else sys.executable)
        self._runner = runner_source().decode("utf-8")
        if drop_privileges is None:
            drop_privileges = os.geteuid() == 0
        self.uid = NOBODY if drop_privileges else None

    def command(self, workdir: str) -> list[str]:
        # The runner travels on the command line: no file of ours needs to be readable inside.
        return [self.python, "-I", "-S", "-B", "-c", self._runner]

    def spawn(self, limits: Limits) -> SandboxProcess:
        workdir = make_workdir(self.uid)
        kwargs = {}
        if self.uid is not None:
            kwargs.update(user=self.uid, group=self.uid, extra_groups=[])
        popen = subprocess.Popen(
            self.command(workdir),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=workdir,
            env={},
            close_fds=True,
            start_new_session=True,
            **kwargs,
        )
        return PipeProcess(popen, workdir)

    def isolation(self, limits: Limits) -> Isolation:
        iso = Isolation(backend=self.name)
        iso.enforced += [
            "separate process (own session; wall-clock kill of its process group)",
            "empty environment",
            "fresh temp dir as cwd",
            f"rlimit address space {limits.memory_bytes // (1024 * 1024)} MiB",
            f"rlimit cpu {limits.cpu_seconds} s",
            f"rlimit file size {limits.file_bytes // (1024 * 1024)} MiB",
            f"rlimit open files {limits.open_files}",
            "no core dumps",
            f"wall clock {limits.wall_seconds:g} s",
        ]
        if self.uid is not None:
            iso.enforced.append(f"unprivileged uid {self.uid} (cannot signal or ptrace the harness)")
        else:
            iso.not_enforced.append("separate uid (runs as the harness's user: can signal it)")
        iso.not_enforced += [
            "network (no network namespace: sockets can connect)",
            "filesystem (no mount namespace: world-readable files outside the temp dir are visible)",
            "process count cap (no cgroup)",
        ]
        return iso


register("local-rlimits", LocalBackend)
# "local" becomes the best isolation the host allows once isolation.py registers it.
register("local", LocalBackend)
