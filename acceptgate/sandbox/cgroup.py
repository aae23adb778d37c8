"""Per-execution cgroups (v1 ``pids`` and ``memory`` controllers): a process cap and a memory cap.

One cgroup pair per execution, created under the cgroups this harness already runs in (so the host's
own accounting and limits still apply to the sandbox), removed on close after every task in it has been
killed. Creating and removing costs well under a millisecond here, so no pool is kept: nothing -- not
even an OOM counter -- carries over from one execution to the next.
"""

from __future__ import annotations

import errno
import functools
import itertools
import os
import signal
import time
from pathlib import Path

from acceptgate.sandbox.hostlayers import Cgroups

PREFIX = "acceptgate-"
_counter = itertools.count()


class CgroupError(OSError):
    """The host does not let us create or use a cgroup; the message says where and why."""


def v1_parents() -> Cgroups:
    """Where per-execution cgroups go: our own pids and memory cgroups (v1 hierarchies)."""
    mounts = _v1_mounts()
    own = _own_cgroups()
    dirs = {}
    for controller in ("pids", "memory"):
        if controller not in mounts:
            raise CgroupError(f"no cgroup v1 {controller!r} hierarchy mounted (cgroup v2 is not supported)")
        root, mountpoint = mounts[controller]
        rel = os.path.relpath(own.get(controller, "/"), root)
        if rel.startswith(".."):
            raise CgroupError(f"our {controller} cgroup is outside the mounted hierarchy ({root})")
        path = Path(mountpoint) / rel
        if not path.is_dir() or not os.access(path, os.W_OK):
            raise CgroupError(f"cgroup dir {path} is not writable")
        dirs[controller] = str(path)
    memsw = (Path(dirs["memory"]) / "memory.memsw.limit_in_bytes").exists()
    return Cgroups(pids=dirs["pids"], memory=dirs["memory"], memsw=memsw)


def _v1_mounts(controllers: tuple[str, ...] = ("pids", "memory")) -> dict[str, tuple[str, str]]:
    """controller -> (root within the hierarchy, mount point), from /proc/self/mountinfo."""
    found = {}
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fields = right.split()
        if len(fields) >= 3 and fields[0] == "cgroup":
            for option in fields[2].split(","):
                if option in controllers:
                    found.setdefault(option, (left.split()[3], left.split()[4]))
    return found


def _own_cgroups() -> dict[str, str]:
    own = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            own[controller] = path
    return own


SLOT = "slot-"  # a fork-server slot's cgroup: acceptgate-slot-<pid>-<n>, long-lived


def sweep_stale(parents: Cgroups, strict: bool = True) -> None:
    """Remove the cgroups left by harness processes that died without closing them (killed, say), with
    anything still running in them; ``strict=False``: one that stays busy does not stop the others."""
    _remove_where(parents, lambda owner: owner.isdigit() and not Path(f"/proc/{owner}").exists(), strict)


def remove_owned(owners: list[int]) -> None:
    """Remove the cgroups that the ended processes ``owners`` made (their tasks killed first): a worker
    process killed before it could close its backend -- its parent's grace ran out on a loaded machine,
    or it died -- leaves its slots' cgroups behind, maybe with a sandbox still in them."""
    names = {str(pid) for pid in owners}
    try:
        parents = v1_parents()
    except CgroupError:  # no cgroup here: none was made
        return
    _remove_where(parents, names.__contains__, strict=False)


def _remove_where(parents: Cgroups, owned, strict: bool = True) -> None:
    """Kill the tasks of and remove our cgroups whose owner pid ``owned`` accepts (under the pids,
    memory and cpuacct parents); ``strict=False``: one that stays busy does not stop the others."""
    cpu = cpuacct_parent()
    for parent in (parents.pids, parents.memory) + ((cpu,) if cpu else ()):
        for child in Path(parent).glob(PREFIX + "*"):
            if owned(child.name[len(PREFIX):].removeprefix(SLOT).split("-")[0]):
                _kill_tasks(child)
                try:
                    _rmdir(child)
                except (OSError, CgroupError):
                    if strict:
                        raise


class ExecutionCgroup:
    """A pids + memory cgroup pair for one execution."""

    def __init__(self, pids: Path, memory: Path, memsw: bool) -> None:
        self.pids = pids
        self.memory = memory
        self.memsw = memsw
        self._oom_control: int | None = None  # kept open: a slot's is read twice per execution

    @classmethod
    def create(cls, parents: Cgroups, *, processes: int, memory_bytes: int, slot: bool = False) -> "ExecutionCgroup":
        name = f"{PREFIX}{SLOT if slot else ''}{os.getpid()}-{next(_counter)}"
        pids, memory = Path(parents.pids) / name, Path(parents.memory) / name
        made: list[Path] = []
        try:
            for path in (pids, memory):
                path.mkdir()
                made.append(path)
            _write(pids / "pids.max", processes)
            _write(memory / "memory.limit_in_bytes", memory_bytes)
            if parents.memsw:  # swap counted too: the cap cannot be dodged by swapping out
                _write(memory / "memory.memsw.limit_in_bytes", memory_bytes)
        except OSError as exc:
            for path in made:
                _rmdir(path)
            raise CgroupError(f"cannot set up cgroup {name}: {exc}") from exc
        return cls(pids, memory, parents.memsw)

    def attach(self, pid: int) -> None:
        """Move a (not yet forked) process into both cgroups; its children inherit them."""
        for path in (self.pids, self.memory):
            _write(path / "cgroup.procs", pid)

    def oom_killed(self) -> bool:
        """Did the memory controller kill (or refuse) anything in this execution?"""
        return self.oom_count() > 0

    def oom_count(self) -> int:
        """OOM kills so far (refusals on older kernels): a long-lived cgroup compares it per execution."""
        try:
            if self._oom_control is None:
                self._oom_control = os.open(self.memory / "memory.oom_control", os.O_RDONLY | os.O_CLOEXEC)
            text = os.pread(self._oom_control, 4096, 0).decode()  # offset 0: the kernel writes it anew
            fields = dict(line.split() for line in text.splitlines())
            if "oom_kill" in fields:
                return int(fields["oom_kill"])
            return int((self.memory / "memory.failcnt").read_text() or 0)  # older kernels
        except (OSError, ValueError):
            return 0

    def set_limits(self, *, processes: int, memory_bytes: int) -> None:
        """Change the caps of a live cgroup (the swap-inclusive cap must never sit below the other)."""
        _write(self.pids / "pids.max", processes)
        current = int((self.memory / "memory.limit_in_bytes").read_text())
        order = ["memory.limit_in_bytes", "memory.memsw.limit_in_bytes"] if self.memsw else ["memory.limit_in_bytes"]
        if self.memsw and memory_bytes > current:
            order.reverse()
        for name in order:
            _write(self.memory / name, memory_bytes)

    def peak_memory(self) -> int:
        try:
            return int((self.memory / "memory.max_usage_in_bytes").read_text())
        except (OSError, ValueError):
            return 0

    def tasks(self) -> list[int]:
        return _tasks(self.pids)

    def kill_all(self) -> None:
        for path in (self.pids, self.memory):
            _kill_tasks(path)

    def remove(self) -> None:
        """Kill what is left and remove both cgroups. Idempotent."""
        fd, self._oom_control = self._oom_control, None
        if fd is not None:
            os.close(fd)
        for path in (self.pids, self.memory):
            if path.exists():
                _kill_tasks(path)
                _rmdir(path)


def _write(path: Path, value: int) -> None:
    with open(path, "w") as f:
        f.write(str(value))


def _tasks(path: Path) -> list[int]:
    try:
        return [int(x) for x in (path / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def _kill_tasks(path: Path, rounds: int = 50) -> None:
    # A task may fork while we kill; killed tasks cannot, so a few rounds empty the group.
    for _ in range(rounds):
        tasks = _tasks(path)
        if not tasks:
            return
        for pid in tasks:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.001)


def _rmdir(path: Path, attempts: int = 200) -> None:
    # rmdir fails with EBUSY until the killed tasks have been reaped by their parents.
    for _ in range(attempts):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY:
                raise
            time.sleep(0.005)
    raise CgroupError(f"cgroup {path} still busy after killing its tasks")


# --- CPU accounting -----------------------------------------------------------------------------------
# The candidate's time limit is on the CPU time of its processes (executor.py), read here on the host:
# a cgroup counts every process of an execution, forked children and orphans included, and nothing the
# candidate does inside can change the counter.

@functools.cache
def cpuacct_parent() -> str | None:
    """Our own v1 ``cpuacct`` cgroup dir when it is mounted and we can create cgroups under it."""
    mounts = _v1_mounts(("cpuacct",))
    if "cpuacct" not in mounts:
        return None
    root, mountpoint = mounts["cpuacct"]
    rel = os.path.relpath(_own_cgroups().get("cpuacct", "/"), root)
    path = Path(mountpoint) / rel
    if rel.startswith("..") or not path.is_dir() or not os.access(path, os.W_OK):
        return None
    return str(path)


class CpuCounter:
    """Reads a cgroup's CPU time (all its processes, user + system) from an open descriptor: one
    pread, a few microseconds, cheap enough to read at every case."""

    def __init__(self, path: Path, v2: bool = False) -> None:
        self.path = path
        self._v2 = v2
        self._fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)

    def seconds(self) -> float | None:
        try:
            raw = os.pread(self._fd, 4096, 0)
        except OSError:  # the cgroup is gone (its container removed): unknown
            return None
        if self._v2:  # cpu.stat: "usage_usec N" first
            for line in raw.split(b"\n"):
                if line.startswith(b"usage_usec "):
                    return int(line.split()[1]) / 1e6
            return None
        return int(raw) / 1e9

    def pids(self) -> list[int]:
        """The cgroup's processes (host pids)."""
        return _tasks(self.path.parent)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class CpuCgroup:
    """A v1 cpuacct cgroup made only to count one execution's (or one slot's) CPU time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.counter = CpuCounter(path / "cpuacct.usage")

    @classmethod
    def create(cls, slot: bool = False) -> "CpuCgroup | None":
        """None where the host has no writable cpuacct hierarchy (the caller falls back)."""
        parent = cpuacct_parent()
        if parent is None:
            return None
        path = Path(parent) / f"{PREFIX}{SLOT if slot else ''}{os.getpid()}-{next(_counter)}"
        try:
            path.mkdir()
            return cls(path)
        except OSError:
            _rmdir(path)
            return None

    def attach(self, pid: int) -> None:
        _write(self.path / "cgroup.procs", pid)

    def seconds(self) -> float | None:
        return self.counter.seconds()

    def remove(self) -> None:
        self.counter.close()
        if self.path.exists():
            _kill_tasks(self.path)
            try:
                _rmdir(self.path)
            except (OSError, CgroupError):
                pass


def counter_for_pid(pid: int, must_contain: str = "") -> CpuCounter | None:
    """The CPU counter of the cgroup a (host) process is in -- e.g. a container's init, whose cgroup
    the engine made -- or None when it cannot be read from here. ``must_contain``: a text the cgroup's
    path must hold (a container's id), so that a pid from another machine's engine is never taken for
    a local process."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    lines = [line for line in lines if must_contain in line.split(":", 2)[-1]]
    v1 = _v1_mounts(("cpuacct",))
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "cpuacct" in controllers.split(",") and "cpuacct" in v1:
            root, mountpoint = v1["cpuacct"]
            rel = os.path.relpath(path, root)
            target = Path(mountpoint) / rel / "cpuacct.usage"
            if not rel.startswith("..") and target.exists():
                try:
                    return CpuCounter(target)
                except OSError:
                    return None
    for line in lines:  # cgroup v2 (unified) only
        if line.startswith("0::"):
            target = Path("/sys/fs/cgroup") / line[3:].lstrip("/") / "cpu.stat"
            if target.exists():
                try:
                    return CpuCounter(target, v2=True)
                except OSError:
                    return None
    return None


class RunDelay:
    """The time an execution's processes spent runnable but waiting for a CPU since this was made: the
    kernel's run-queue delay per task (/proc/PID/schedstat, its second field), summed over the processes
    ``pids()`` lists now, each from the value it had when first seen here (0 for a process born since).
    What a loaded machine takes from an execution's wall clock; a sleep is not in it. A process that ends
    takes its last increment with it (at most one look's worth); the threads of a process beyond its
    first are not counted.

    Read at every case start, so each process's file stays open and is read again with one pread (an
    open of a /proc file costs ten times the read); ``close()`` (or the collector) lets them go. A
    descriptor names the process it was opened for, never a later one given the same pid: it then
    fails to read and is opened again. The list of processes is read again at most every
    ``LIST_SECONDS`` (a process born since the last list is counted from 0 when first seen, so the
    delay it had waited before then counts as later: the limit errs by that much the candidate's
    way), and whenever a limit is checked (``seconds(fresh=True)``)."""

    LIST_SECONDS = 0.02

    def __init__(self, pids: "Callable[[], list[int]]") -> None:
        self._pids = pids
        self._files: dict[tuple[str, int], int] = {}
        self._listed: list[int] = []
        self._listed_at = float("-inf")
        self._seen = self._read(True)
        self.total = 0.0

    def _current(self, fresh: bool) -> list[int]:
        now = time.monotonic()
        if fresh or now - self._listed_at >= self.LIST_SECONDS:
            self._listed, self._listed_at = self._pids(), now
        return self._listed

    def _pread(self, name: str, pid: int) -> bytes | None:
        key = (name, pid)
        for attempt in (0, 1):
            fd = self._files.get(key)
            try:
                if fd is None:
                    fd = self._files[key] = os.open(f"/proc/{pid}/{name}", os.O_RDONLY | os.O_CLOEXEC)
                return os.pread(fd, 512, 0)
            except OSError:  # ended (or a new process with its pid: open once more)
                fd = self._files.pop(key, None)
                if fd is not None:
                    os.close(fd)
                if attempt or fd is None:
                    return None
        return None

    def _read(self, fresh: bool) -> dict[int, int]:
        out = {}
        pids = self._current(fresh)
        for pid in pids:
            raw = self._pread("schedstat", pid)
            try:
                out[pid] = int(raw.split()[1])
            except (AttributeError, ValueError, IndexError):
                pass
        if len(self._files) > 2 * len(pids) + 8:  # processes gone: their descriptors too
            live = set(pids)
            for key in [k for k in self._files if k[1] not in live]:
                os.close(self._files.pop(key))
        return out

    def runnable(self) -> bool:
        """Whether one of the processes is running or waiting for a CPU now (state R): a wait the kernel
        adds to its run-queue delay only once it gets one."""
        for pid in self._current(True):
            raw = self._pread("stat", pid)
            try:
                if raw is not None and raw.rpartition(b")")[2].split()[0] == b"R":
                    return True
            except IndexError:
                pass
        return False

    def seconds(self, fresh: bool = True) -> float:
        """The delay so far; ``fresh=False``: over the processes listed within LIST_SECONDS."""
        for pid, ns in self._read(fresh).items():
            before = self._seen.get(pid, 0)
            if ns > before:
                self.total += (ns - before) / 1e9
            self._seen[pid] = ns
        return self.total

    def close(self) -> None:
        files, self._files = self._files, {}
        for fd in files.values():
            os.close(fd)

    __del__ = close


class ProcessTreeCpu:
    """Where no cgroup counts: the CPU time of a process (utime + stime, and cutime + cstime of the
    children it has reaped) and of its live descendants where the kernel lists them
    (/proc/PID/task/TID/children). Other processes of the execution are not counted; the wall-clock
    backstop still bounds them (``isolation`` says so)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._tick = os.sysconf("SC_CLK_TCK")

    def seconds(self) -> float | None:
        total = 0
        for pid in self.pids():
            try:
                with open(f"/proc/{pid}/stat", "rb") as f:
                    fields = f.read().rpartition(b")")[2].split()
                total += sum(int(x) for x in fields[11:15])
            except (OSError, ValueError, IndexError):
                if pid == self.pid:
                    return None
        return total / self._tick

    def pids(self) -> list[int]:
        """The process and its live descendants (as the kernel lists each task's children)."""
        seen, todo = [], [self.pid]
        while todo:
            pid = todo.pop()
            if pid in seen:
                continue
            seen.append(pid)
            try:
                for task in os.listdir(f"/proc/{pid}/task"):
                    with open(f"/proc/{pid}/task/{task}/children", "rb") as f:
                        todo += [int(x) for x in f.read().split()]
            except (OSError, ValueError):
                pass
        return seen

    def close(self) -> None:
        pass
