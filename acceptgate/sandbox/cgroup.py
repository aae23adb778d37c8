"""Per-execution cgroups (v1 ``pids`` and ``memory`` controllers): a process cap and a memory cap.

One cgroup pair per execution, created under the cgroups this harness already runs in (so the host's
own accounting and limits still apply to the sandbox), removed on close after every task in it has been
killed. Creating and removing costs well under a millisecond here, so no pool is kept: nothing -- not
even an OOM counter -- carries over from one execution to the next.
"""

from __future__ import annotations

import errno
import itertools
import os
import signal
import time
from pathlib import Path

from acceptgate.sandbox.hostprobe import Cgroups

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


def _v1_mounts() -> dict[str, tuple[str, str]]:
    """controller -> (root within the hierarchy, mount point), from /proc/self/mountinfo."""
    found = {}
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fields = right.split()
        if len(fields) >= 3 and fields[0] == "cgroup":
            for option in fields[2].split(","):
                if option in ("pids", "memory"):
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


def sweep_stale(parents: Cgroups) -> None:
    """Remove empty cgroups left by harness processes that died without closing them."""
    for parent in (parents.pids, parents.memory):
        for child in Path(parent).glob(PREFIX + "*"):
            name = child.name[len(PREFIX):]
            owner = name.removeprefix(SLOT).split("-")[0]
            if owner.isdigit() and not Path(f"/proc/{owner}").exists():
                _kill_tasks(child)
                _rmdir(child)


class ExecutionCgroup:
    """A pids + memory cgroup pair for one execution."""

    def __init__(self, pids: Path, memory: Path, memsw: bool) -> None:
        self.pids = pids
        self.memory = memory
        self.memsw = memsw

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
            fd = os.open(self.memory / "memory.oom_control", os.O_RDONLY)
            try:
                text = os.read(fd, 4096).decode()
            finally:
                os.close(fd)
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
