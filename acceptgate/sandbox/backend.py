"""The executor interface: what a sandbox backend must provide.

A backend starts the candidate runner (``runner.py``) in a fresh, isolated process and hands back a
``SandboxProcess``: a byte pipe in (its stdin), a byte pipe out (its stdout), a kill switch and an
exit status. Everything else -- framing, deadlines, comparison, verdicts -- is the backend-independent
harness in ``executor.py``. A wrong answer, a crash or a timeout is a *result*; a backend raises
``BackendUnavailable`` only when the machinery itself cannot start (missing engine, image, binary).
"""

from __future__ import annotations

import abc
import importlib
import os
import select
import signal
import time
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Callable

RUNNER_SOURCE_NAME = "runner.py"

MiB = 1024 * 1024
# The most one read of a runner's answers asks for: a pipe holds 64 KiB, and a buffer above glibc's mmap
# threshold (128 KiB until a large block is freed) is an mmap and munmap per read: a sixth of a case's
# round trip (bench/bench_samples.py --breakdown, "raw frames": 23 µs against 6 µs per call).
READ_CHUNK = 64 * 1024
PIPE_ATOMIC = 4096  # PIPE_BUF: a write of at most this many bytes is all or nothing


def runner_source() -> bytes:
    return resources.files("acceptgate.sandbox").joinpath(RUNNER_SOURCE_NAME).read_bytes()


ZYGOTE_SOURCE_NAME = "zygote.py"


def zygote_source() -> str:
    """The fork server's program (``zygote.py``), run as ``python -c`` text in the sandbox."""
    return resources.files("acceptgate.sandbox").joinpath(ZYGOTE_SOURCE_NAME).read_text()


# What a fork server (the local zygote, the docker keeper's) imports before any execution, so that no
# runner pays for it: what the runner needs, and the standard modules candidates import most (typing
# alone costs ~10 ms per fresh interpreter). Every module here also costs every execution (a bigger
# copy to fork and tear down: ~0.1 ms for hashlib, fractions, decimal, statistics, random, datetime and
# json together, which the 3,280 CodeT HumanEval samples import 26 times and MBPP+'s references never).
PRELOAD = ("errno", "marshal", "resource", "fcntl", "typing", "re", "collections", "math", "itertools", "functools",
           "heapq", "bisect", "string", "operator", "copy")


# Every sandboxed interpreter's string-hash seed: one fixed seed for every execution on every backend, so
# that a program whose behaviour depends on it (iterating a set of strings) gets the same verdict in every
# run, on every machine with the same Python. Not one per execution: a fork server's runners inherit the
# hash secret of the interpreter they are forked from, fixed at its start (and changing it later would
# break every string already hashed). 0 turns the randomisation off (a string's hash is a function of the
# string alone); the harness's own interpreter keeps its random seed (it parses the answers).
HASH_SEED = 0
# How a sandboxed interpreter is started: -I less -E (so that PYTHONHASHSEED, the one variable of its
# otherwise empty environment, is read), no site, no bytecode written.
PYTHON_FLAGS = ("-s", "-P", "-S", "-B")
SANDBOX_ENV = {"PYTHONHASHSEED": str(HASH_SEED)}


def wall_backstop(limit: float) -> float:
    """The wall clock allowed for a CPU-time limit: generous, so that a loaded machine (which slows a
    program's wall time, not its CPU time) never decides a verdict; it stops what uses no CPU (a sleep,
    a wait)."""
    return max(3.0 * limit, limit + 20.0)


@dataclass(frozen=True)
class Limits:
    # The execution's time limit, in CPU seconds of all its processes where the backend counts them
    # (SandboxProcess.cpu_seconds: a cgroup read on the host), else in wall seconds. The name is
    # historical (--wall-seconds); the wall clock proper is the backstop below.
    wall_seconds: float = 10.0
    memory_bytes: int = 128 * MiB
    cpu_seconds: int = 11  # the runner's own RLIMIT_CPU, a per-process backstop to the limit above
    file_bytes: int = 16 * MiB
    open_files: int = 64
    processes: int = 16  # per execution where a cgroup or a private uid allows it
    # Optional per-case limit on top of the wall clock (as EvalPlus limits each input): a case not
    # answered this long after the previous answer is a timeout. Enforced by the harness, not the backend.
    # A tuple gives each case its own limit (case i: case_seconds[i]), as EvalPlus's per-input limits.
    case_seconds: float | tuple[float, ...] | None = None
    # The wall-clock backstop of the execution (and of each case); None: wall_backstop(limit).
    backstop_seconds: float | None = None
    # Optional limit on loading the candidate (its module-level code), on the same clocks as a case's;
    # None: only the execution's limit holds until its first call (as EvalPlus, whose per-input limits
    # start at the first call and whose whole run is bounded).
    load_seconds: float | None = None

    def backstop(self, limit: float) -> float:
        """Wall seconds allowed for a CPU-time ``limit`` (the execution's or a case's)."""
        if self.backstop_seconds is not None:
            return self.backstop_seconds
        return wall_backstop(limit)

    def rlimits(self) -> dict[str, int]:
        """What the runner applies to itself before the candidate loads."""
        return {
            "RLIMIT_AS": self.memory_bytes,
            "RLIMIT_CPU": self.cpu_seconds,
            "RLIMIT_FSIZE": self.file_bytes,
            "RLIMIT_NOFILE": self.open_files,
            "RLIMIT_CORE": 0,
        }


def time_limit_text(limits: Limits, counter: str) -> str:
    """The time limit as ``isolation`` states it; ``counter``: where the CPU time is read ("" = none)."""
    per_case = ""
    if isinstance(limits.case_seconds, (int, float)):
        per_case = f" and {limits.case_seconds:g} s per case"
    elif limits.case_seconds:
        per_case = " and a limit per case"
    if not counter:
        return f"wall clock {limits.wall_seconds:g} s{per_case} (no CPU-time counter here)"
    load = f", {limits.load_seconds:g} s for loading the candidate" if limits.load_seconds else ""
    return (f"time limit {limits.wall_seconds:g} s{per_case}{load}, of CPU time ({counter}) and of wall time "
            "less the time spent waiting for a CPU (the kernel's run-queue delay), wall-clock backstop "
            f"{limits.backstop(limits.wall_seconds):g} s")


class BackendUnavailable(RuntimeError):
    """The backend cannot run here; the message says what is missing and how to get it."""


@dataclass
class ExitStatus:
    returncode: int | None  # None: still running / unknown
    signal: int | None = None  # the signal that ended it, if any
    oom_killed: bool = False  # a memory controller (cgroup, Docker) ended it

    def describe(self) -> str:
        if self.oom_killed:
            return "killed by the memory limit"
        if self.signal:
            try:
                return f"killed by {signal.Signals(self.signal).name}"
            except ValueError:
                return f"killed by signal {self.signal}"
        return f"exit code {self.returncode}"


@dataclass
class Isolation:
    """What the sandbox enforced for one execution, and what it could not."""

    backend: str
    enforced: list[str] = field(default_factory=list)
    not_enforced: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"backend": self.backend, "enforced": list(self.enforced),
                "not_enforced": list(self.not_enforced), "notes": list(self.notes)}


class SandboxProcess(abc.ABC):
    """One running candidate runner. File descriptors are non-blocking-capable pipes."""

    @abc.abstractmethod
    def write(self, data: bytes, deadline: float) -> None:
        """Write all of data to the runner's stdin by the monotonic deadline (TimeoutError, BrokenPipeError)."""

    @abc.abstractmethod
    def read(self, deadline: float) -> bytes:
        """Read what is available from the runner's stdout; b'' at EOF; TimeoutError past deadline."""

    @abc.abstractmethod
    def kill(self) -> None:
        """End the runner and everything it started. Idempotent."""

    @abc.abstractmethod
    def wait(self, timeout: float) -> ExitStatus:
        """Exit status once the runner has ended (kill first if it may still run)."""

    def close(self) -> None:
        """Release the process's resources (temp dir, cgroup, container). Idempotent."""

    def cpu_seconds(self) -> float | None:
        """CPU seconds used so far by the sandbox's processes, read where the candidate cannot change
        it (a cgroup's counter, from the host); None where this backend cannot count them (the time
        limit is then on the wall clock)."""
        return None

    def run_delay(self) -> Any:
        """The time the execution's processes wait for a CPU from now on: an object with ``seconds()`` and
        ``runnable()`` (cgroup.RunDelay, read on the host); None where this backend cannot list them (a
        remote engine)."""
        return None


class RunnerPipes:
    """For a SandboxProcess whose runner's stdin and stdout are pipes the harness holds directly:
    write() and read() on them, non-blocking, under the caller's deadline."""

    def open_pipes(self, to_runner: int, from_runner: int) -> None:
        self._in, self._out = to_runner, from_runner
        os.set_blocking(to_runner, False)
        os.set_blocking(from_runner, False)
        self._poll = select.poll()  # one poll object for every wait, not a select() list per wait
        self._poll.register(from_runner, select.POLLIN)
        self._both: select.poll | None = None  # pump()'s: the output and, while calls wait, the input
        self._in_polled = False

    def close_pipes(self) -> None:
        for fd in (self._in, self._out):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._in = self._out = -1

    def write(self, data: bytes, deadline: float) -> None:
        if len(data) <= PIPE_ATOMIC:  # a call frame: one write that cannot be partial (pipe(7))
            try:
                n = os.write(self._in, data)
            except BlockingIOError:
                n = 0
            if n == len(data):
                return
            data = data[n:]
        view = memoryview(data)
        while view:
            try:
                n = os.write(self._in, view)
            except BlockingIOError:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not select.select([], [self._in], [], remaining)[1]:
                    raise TimeoutError from None
                continue
            view = view[n:]

    pipelined = True  # pump() below: calls written ahead while answers are read

    def pump(self, out: memoryview, deadline: float) -> tuple[memoryview, bytes]:
        """Write what the runner's input takes of ``out`` while waiting for its output: (what is left of
        ``out``, what was read; b'' at EOF), TimeoutError past the deadline. Neither side waits for the
        other: the runner's answers are read even while its input is full. A runner that has closed its
        input (it ended) gets nothing more; its answers before that are still read."""
        both = self._both
        if both is None:
            both = self._both = select.poll()
            both.register(self._out, select.POLLIN)
        while True:
            if out:
                try:
                    out = out[os.write(self._in, out):]
                except BlockingIOError:
                    pass
                except BrokenPipeError:
                    out = out[:0]
            if out:
                both.register(self._in, select.POLLOUT)
            elif self._in_polled:
                both.unregister(self._in)
            self._in_polled = bool(out)
            remaining = deadline - time.monotonic()
            ready = both.poll(remaining * 1000 + 1) if remaining > 0 else []
            if any(fd == self._out for fd, _ in ready):
                try:
                    return out, os.read(self._out, READ_CHUNK)
                except BlockingIOError:
                    continue
            if not ready and time.monotonic() >= deadline:
                raise TimeoutError

    def read(self, deadline: float) -> bytes:
        # Wait first, then read: an answer is rarely there the moment its call is written, and a read
        # that fails (EAGAIN, an exception here) costs as much as the wait.
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self._poll.poll(remaining * 1000 + 1):
                if time.monotonic() >= deadline:
                    raise TimeoutError
                continue
            try:
                return os.read(self._out, READ_CHUNK)
            except BlockingIOError:
                continue


class Backend(abc.ABC):
    name: str = "?"

    @abc.abstractmethod
    def spawn(self, limits: Limits) -> SandboxProcess:
        """Start the runner in a fresh sandbox: fresh temp dir, empty environment."""

    @abc.abstractmethod
    def isolation(self, limits: Limits) -> Isolation:
        """What this backend enforces on this host (probed once, reported with every result)."""

    def reopener(self) -> Callable[[], "Backend"] | None:
        """A factory of a backend like this one, callable in a process forked from this one (a batch's
        worker process, ``workerprocs``), or None: this backend's batches run on threads."""
        return None

    def close(self) -> None:
        """Release pooled resources (warm containers, cgroups)."""

    def __enter__(self) -> "Backend":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# The registry by name. A backend's module registers its factories when imported (``register`` at its
# end); this table says which module holds each built-in name, so that the interface imports none of
# its implementations and a backend's dependencies (the Docker SDK) load only when it is asked for.
BUILTIN_MODULES = {
    "local": "acceptgate.sandbox.local",
    "local-bwrap": "acceptgate.sandbox.local",
    "local-forkserver": "acceptgate.sandbox.local",
    "local-rlimits": "acceptgate.sandbox.local",
    "docker": "acceptgate.sandbox.docker_backend",
}
_REGISTRY: dict[str, Callable[..., Backend]] = {}


def register(name: str, factory: Callable[..., Backend]) -> None:
    _REGISTRY[name] = factory


def _load(name: str) -> bool:
    """Import the module of a built-in backend (it registers itself); False if it cannot load here."""
    if name not in _REGISTRY and name in BUILTIN_MODULES:
        try:
            importlib.import_module(BUILTIN_MODULES[name])
        except ImportError:  # e.g. the Docker SDK is not installed: the name is not offered
            return False
    return name in _REGISTRY


def create(name: str, **options: Any) -> Backend:
    if not _load(name):
        raise ValueError(f"unknown backend {name!r}; valid backends: {', '.join(names())}")
    return _REGISTRY[name](**options)


def names() -> list[str]:
    return sorted(n for n in {*BUILTIN_MODULES, *_REGISTRY} if _load(n))
