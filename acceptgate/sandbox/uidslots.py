"""Per-slot uids for the RLIMIT_NPROC process cap (the limit counts processes per real uid): one
allocator per uid range in a harness process, shared by the local backends and the Docker backend's
warm containers, and the cleanup of what a slot uid leaves behind."""

from __future__ import annotations

import collections
import os
import shutil
import signal
import threading
import time

from acceptgate._util import forksafe
from acceptgate.sandbox.backend import BackendUnavailable


class UidSlots:
    """Per-execution uids for the RLIMIT_NPROC cap (the limit counts processes per real uid)."""

    def __init__(self, uids: range) -> None:
        self.size = len(uids)
        self._free = collections.deque(uids)
        self._cond = threading.Condition()

    def acquire(self, timeout: float | None = None) -> int:
        # Oldest first: zombies a slot's last run left for the host's init to reap still count
        # against its RLIMIT_NPROC until then.
        with self._cond:
            if not self._cond.wait_for(lambda: self._free, timeout):
                raise BackendUnavailable(f"all {self.size} per-slot uids of this harness are in use "
                                         "(long-lived sandboxes of backends never closed?)")
            return self._free.popleft()

    def release(self, uid: int) -> None:
        kill_uid(uid)
        remove_owned(uid)
        with self._cond:
            self._free.append(uid)
            self._cond.notify()


def kill_uid(uid: int, rounds: int = 50) -> None:
    """SIGKILL every live process running as uid (a slot uid: nothing else runs as it).

    Zombies are skipped: they are already dead, and an orphaned one waits for the host's init.
    """
    for _ in range(rounds):
        found = False
        with os.scandir("/proc") as it:
            for entry in it:
                if not entry.name.isdigit():
                    continue
                try:
                    if entry.stat().st_uid != uid or _is_zombie(entry.name):
                        continue
                    found = True
                    os.kill(int(entry.name), signal.SIGKILL)
                except (FileNotFoundError, ProcessLookupError):
                    pass
        if not found:
            return
        time.sleep(0.002)


def _is_zombie(pid: str) -> bool:
    with open(f"/proc/{pid}/stat", "rb") as f:
        return f.read().rpartition(b")")[2].split()[0] in (b"Z", b"X")


SHARED_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")


def remove_owned(uid: int) -> None:
    """Remove what a slot uid left in the host's shared writable dirs (no mount namespace here).

    Hygiene, not a guarantee: other world-writable places may exist, which ``isolation`` says.
    """
    for top in SHARED_WRITABLE:
        try:
            entries = list(os.scandir(top))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.stat(follow_symlinks=False).st_uid != uid:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)
            except OSError:
                pass


_slot_pools: dict[range, UidSlots] = {}
_slot_lock = threading.Lock()


def slot_pool(uids: range) -> UidSlots:
    """The one allocator of these uids in this harness process, shared by every backend that uses them.
    (A forked child is given another range by hostprobe.probe(), hence another allocator.)"""
    with _slot_lock:
        return _slot_pools.setdefault(uids, UidSlots(uids))


forksafe.renew_in_child(globals(), _slot_lock=threading.Lock)  # another thread may have held it at the fork
