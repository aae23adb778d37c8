"""Every page of every file a sandbox can read, resident in the page cache before any candidate runs.

The local sandboxes bind the interpreter's files read-only from the host, so all executions share
their page cache. Which pages are resident is state one execution could set and a later one read:
evict a page (fadvise, madvise) or load one (read it), then tell resident from absent pages (mincore,
cachestat, an RWF_NOWAIT read, the pages a fault maps around the one it needs as /proc/self/smaps
counts them, or the time a read takes). The syscall filter (``seccomp.py``) denies every call that
evicts or probes; this module takes away the rest by construction: the harness reads every file of
the view *before* the first candidate, so there is no page left for a candidate to load, and the pages
are charged to the harness's memory cgroup, not to a slot's, so no candidate can push them out by
filling its own memory cap (a cgroup's reclaim takes only pages charged to it). A candidate then sees
every page resident, whatever ran before it.

What stays: pages the *host* evicts later under its own memory pressure (not any candidate's doing)
could be loaded again by a candidate and seen by a later one; ``ensure`` is called before executions
and re-checks the view at most every REFRESH_SECONDS. A view small enough (PIN_MAX_BYTES, e.g. the
Docker image's ~50 MB) is also *pinned*: ``Pinned`` keeps every file mapped and mlock'ed while the
process lives, so no eviction at all reaches it (needs CAP_IPC_LOCK or a large RLIMIT_MEMLOCK; where
mlock is refused the view is only re-checked).
"""

from __future__ import annotations

import ctypes
import mmap
import os
import threading
import time
from dataclasses import dataclass

from acceptgate._util import forksafe
REFRESH_SECONDS = 300.0
CHUNK = 1 << 20
# Pinned when at most this big: the Docker image's layers (~50 MB) and the local view (the interpreter,
# its stdlib and /usr/lib: about 1 GiB here, 0.4 s of CPU to map and lock once per process). A host
# that evicts cold page cache on its own (DAMON's pageout scheme on this machine kind) would otherwise
# hand candidates fresh pages to load between two checks.
PIN_MAX_BYTES = 2 * 1024 * 1024 * 1024


@dataclass
class Touched:
    files: int = 0
    bytes: int = 0
    loaded_pages: int = 0  # pages that were not resident and have been read in
    seconds: float = 0.0


_libc = None
_lock = threading.Lock()
_last: dict[tuple[str, ...], float] = {}  # view -> monotonic time of its last full check


def _c():
    global _libc
    if _libc is None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                              ctypes.c_long]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        libc.mlock.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        libc.munlock.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        _libc = libc
    return _libc


def files(roots: tuple[str, ...], hidden: tuple[str, ...] = ()) -> list[str]:
    """The regular files under roots (a root may be a file), minus the hidden dirs; symlinks are not
    followed (what they point to inside the view is walked as itself)."""
    out: list[str] = []
    covered = tuple(h.rstrip("/") + "/" for h in hidden)
    for root in roots:
        if os.path.isfile(root) and not os.path.islink(root):
            out.append(root)
            continue
        for top, dirs, names in os.walk(root):
            if covered and (top + "/").startswith(covered):
                dirs[:] = []
                continue
            for name in names:
                path = os.path.join(top, name)
                if not os.path.islink(path):
                    out.append(path)
    return out


def resident(fd: int, size: int) -> bytes | None:
    """One byte per page of the open file, 1 where the page is resident now; None if mincore cannot tell."""
    libc = _c()
    pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
    addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    if addr in (None, ctypes.c_void_p(-1).value):
        return None
    try:
        vector = (ctypes.c_ubyte * pages)()
        if libc.mincore(ctypes.c_void_p(addr), size, vector) != 0:
            return None
        return bytes(v & 1 for v in vector) if any(v > 1 for v in vector) else bytes(vector)
    finally:
        libc.munmap(ctypes.c_void_p(addr), size)


SYS_CACHESTAT = 451  # the same number on every architecture (Linux 6.5+)
_cachestat = [True]  # False once the kernel said it has no cachestat


class _Range(ctypes.Structure):
    _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]


class _Stat(ctypes.Structure):
    _fields_ = [("nr_cache", ctypes.c_uint64), ("nr_dirty", ctypes.c_uint64), ("nr_writeback", ctypes.c_uint64),
                ("nr_evicted", ctypes.c_uint64), ("nr_recently_evicted", ctypes.c_uint64)]


def _missing_pages(fd: int, size: int) -> int:
    """Pages of the open file not resident now (all of them when neither cachestat nor mincore can
    tell). cachestat is one call and no mapping: several times faster over a 1 GB view."""
    pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
    if _cachestat[0]:
        stat = _Stat()
        if _c().syscall(SYS_CACHESTAT, fd, ctypes.byref(_Range(0, 0)), ctypes.byref(stat), 0) == 0:
            return max(0, pages - stat.nr_cache)
        if ctypes.get_errno() == 38:  # ENOSYS
            _cachestat[0] = False
    found = resident(fd, size)
    if found is None:
        return pages
    return found.count(0)


def touch(paths: list[str]) -> Touched:
    """Read in every page of these files that is not resident."""
    started = time.monotonic()
    done = Touched()
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            if not (st.st_mode & 0o170000 == 0o100000) or not st.st_size:
                continue
            done.files += 1
            done.bytes += st.st_size
            missing = _missing_pages(fd, st.st_size)
            if missing:
                done.loaded_pages += missing
                while os.read(fd, CHUNK):
                    pass
        except OSError:
            pass
        finally:
            os.close(fd)
    done.seconds = time.monotonic() - started
    return done


def ensure(roots: tuple[str, ...], hidden: tuple[str, ...] = (), *, force: bool = False) -> Touched | None:
    """Make the view resident unless it was checked within REFRESH_SECONDS (in this process)."""
    key = tuple(roots) + ("\0",) + tuple(hidden)
    with _lock:
        last = _last.get(key)
        if not force and last is not None and time.monotonic() - last < REFRESH_SECONDS:
            return None
        done = touch(files(roots, hidden))
        _last[key] = time.monotonic()
        return done


class Pinned:
    """Every page of the files under roots mapped and locked in memory until ``close``.

    ``Pinned.try_pin`` returns None (and keeps nothing) when the view is over ``max_bytes`` or the
    kernel refuses to lock it; the caller then relies on ``ensure``.
    """

    def __init__(self, spans: list[tuple[int, int]], size: int) -> None:
        self._spans = spans
        self.bytes = size

    @classmethod
    def try_pin(cls, roots: tuple[str, ...], hidden: tuple[str, ...] = (), *,
                max_bytes: int = PIN_MAX_BYTES) -> "Pinned | None":
        paths = files(roots, hidden)
        sizes = []
        for path in paths:
            try:
                st = os.stat(path, follow_symlinks=False)
            except OSError:
                continue
            if st.st_mode & 0o170000 == 0o100000 and st.st_size:
                sizes.append((path, st.st_size))
        if sum(size for _, size in sizes) > max_bytes:
            return None
        libc = _c()
        spans: list[tuple[int, int]] = []
        pinned = cls(spans, sum(size for _, size in sizes))
        for path, size in sizes:
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue
            try:
                addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
            finally:
                os.close(fd)  # the mapping keeps the file
            if addr in (None, ctypes.c_void_p(-1).value):
                continue
            spans.append((addr, size))
            if libc.mlock(ctypes.c_void_p(addr), size) != 0:  # reads in and locks every page
                pinned.close()
                return None
        return pinned

    def close(self) -> None:
        libc = _c()
        spans, self._spans = self._spans, []
        for addr, size in spans:
            libc.munmap(ctypes.c_void_p(addr), size)  # unlocks too


_held: dict[tuple[tuple[str, ...], tuple[str, ...]], list] = {}  # view -> [Pinned, holders]
_held_lock = threading.Lock()


forksafe.renew_in_child(globals(), _lock=threading.Lock, _held_lock=threading.Lock)  # held by another thread?


def hold(roots: tuple[str, ...], hidden: tuple[str, ...] = ()) -> tuple | None:
    """The view pinned for this process from its first holder on (one pin, however many backends of the
    process use the same view, one after another or at once); a key for ``release``, or None when it
    cannot be pinned."""
    key = (tuple(roots), tuple(hidden))
    with _held_lock:
        entry = _held.get(key)
        if entry is None:
            pinned = Pinned.try_pin(key[0], key[1], max_bytes=PIN_MAX_BYTES)
            if pinned is None:
                return None
            entry = _held[key] = [pinned, 0]
        entry[1] += 1
        return key


def held(key: tuple | None) -> Pinned | None:
    with _held_lock:
        entry = _held.get(key) if key is not None else None
        return entry[0] if entry else None


def release(key: tuple | None) -> None:
    """One holder fewer. The pin itself stays until the process exits: a process that ran sandboxes
    once (a gate run creates six backends one after another, a service one per request, a test worker
    hundreds) would otherwise map and lock the ~1 GiB view again each time (0.4 s of CPU each), and the
    locked pages are the page cache's, shared with every other process using the view."""
    if key is None:
        return
    with _held_lock:
        entry = _held.get(key)
        if entry is not None and entry[1] > 0:
            entry[1] -= 1
