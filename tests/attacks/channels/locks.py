# Locks on a file every execution can read (the standard library's os.py): "hold" takes every kind it
# can (POSIX byte-range, OFD byte-range, flock, a lease, a directory notification, an inotify watch)
# and keeps them for `seconds`; "probe" looks for any lock held by someone else until it sees one or
# `seconds` pass. Each answers what it managed to do (or saw).
import ctypes
import fcntl
import os
import struct
import time

F_OFD_GETLK, F_OFD_SETLK = 36, 37
F_SETLEASE, F_NOTIFY = 1024, 1026
# (where every execution has a root of its own, the only host file it can open is its interpreter)
SHARED = next(p for p in (os.path.join(os.path.dirname(os.__file__), "os.py"), "/proc/self/exe") if os.path.exists(p))


def _flock(kind, start=7, length=3):
    return struct.pack("hhqqi4x", kind, os.SEEK_SET, start, length, 0)


def hold(seconds):
    fd = os.open(SHARED, os.O_RDONLY)
    held = []
    for name, cmd in (("posix", fcntl.F_SETLK), ("ofd", F_OFD_SETLK)):
        try:
            fcntl.fcntl(fd, cmd, _flock(fcntl.F_RDLCK))
            held.append(name)
        except OSError:
            pass
    try:
        fcntl.flock(os.open(SHARED, os.O_RDONLY), fcntl.LOCK_SH | fcntl.LOCK_NB)
        held.append("flock")
    except OSError:
        pass
    try:
        fcntl.fcntl(fd, F_SETLEASE, fcntl.F_RDLCK)
        held.append("lease")
    except OSError:
        pass
    try:
        fcntl.fcntl(os.open(os.path.dirname(SHARED), os.O_RDONLY), F_NOTIFY, 0x1)
        held.append("notify")
    except OSError:
        pass
    libc = ctypes.CDLL(None, use_errno=True)
    ino = libc.inotify_init1(0)
    if ino >= 0 and libc.inotify_add_watch(ino, SHARED.encode(), 0x20) >= 0:  # IN_OPEN
        held.append("inotify")
    time.sleep(seconds)
    return held


def probe(seconds):
    seen = set()
    end = time.monotonic() + seconds
    while not seen and time.monotonic() < end:
        fd = os.open(SHARED, os.O_RDONLY)
        for name, cmd in (("posix", fcntl.F_GETLK), ("ofd", F_OFD_GETLK)):
            try:
                got = fcntl.fcntl(fd, cmd, _flock(fcntl.F_WRLCK, 0, 0))
                if struct.unpack("hhqqi4x", got)[0] != fcntl.F_UNLCK:
                    seen.add(name)
            except OSError:
                pass
        try:  # an exclusive flock is refused while anyone holds a shared one
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
        except BlockingIOError:
            seen.add("flock")
        except OSError:
            pass
        os.close(fd)
        time.sleep(0.05)
    return sorted(seen)


def f(role, seconds):
    return hold(seconds) if role == "hold" else probe(seconds)
