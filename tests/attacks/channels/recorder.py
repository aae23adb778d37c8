# Leave a token everywhere one execution might reach a later one, then look for it. "record" writes
# the token (a number below 2**16) into files of every writable place, into System V IPC and an
# abstract socket name, and into the page cache of a file every execution can read (evicting the
# pages of its set bits); "find" answers everything it sees: files and their contents, IPC objects,
# the resident pages of that file (by mincore and by RWF_NOWAIT reads), and which calls were refused.
import ctypes
import mmap
import os
import socket

PLACES = (".", "/tmp", "/dev/shm", "/var/tmp")
STDLIB = os.path.dirname(os.__file__)
SHARED = next(p for p in (os.path.join(STDLIB, "pydoc_data", "topics.py"), os.path.join(STDLIB, "typing.py"),
                          "/proc/self/exe")
              if os.path.exists(p))  # a file every execution can read, of 16 pages or more, rarely read
PAGE = mmap.PAGESIZE
BITS = 16
IPC_CREAT = 0o1000
KEY = 0x41475243  # "AGRC"


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    return libc


def record(token):
    done = []
    for place in PLACES:
        try:
            with open(os.path.join(place, "agrec-%d" % token), "w") as fh:
                fh.write("AGREC %d" % token)
            done.append("file " + place)
        except OSError:
            pass
    libc = _libc()
    if libc.shmget(KEY + token, 4096, IPC_CREAT | 0o666) >= 0:
        done.append("sysv shm")
    try:
        s = socket.socket(socket.AF_UNIX)
        s.bind("\0agrec-%d" % token)
        done.append("abstract socket")
    except OSError:
        pass
    fd = os.open(SHARED, os.O_RDONLY)
    os.read(fd, BITS * PAGE)  # every page of the window resident, then the set bits' pages evicted
    try:
        for bit in range(BITS):
            if token >> bit & 1:
                os.posix_fadvise(fd, bit * PAGE, PAGE, os.POSIX_FADV_DONTNEED)
        done.append("page cache")
    except OSError:
        pass
    return done


def _bits(resident):
    return sum(1 << bit for bit in range(BITS) if not resident[bit])


def find():
    seen = {}
    for place in PLACES:
        try:
            for name in os.listdir(place):
                if name.startswith("agrec-"):
                    with open(os.path.join(place, name)) as fh:
                        seen.setdefault("files", []).append(fh.read())
        except OSError:
            pass
    libc = _libc()
    with open("/proc/sysvipc/shm") if os.path.exists("/proc/sysvipc/shm") else open(os.devnull) as fh:
        keys = [int(line.split()[0]) - KEY for line in fh.read().splitlines()[1:] if line.split()]
    if any(0 <= k < 1 << BITS for k in keys):
        seen["sysv shm"] = [k for k in keys if 0 <= k < 1 << BITS]
    try:
        with open("/proc/self/net/unix") as fh:
            names = [line.split()[-1] for line in fh.read().splitlines()[1:] if "agrec-" in line]
        if names:
            seen["abstract sockets"] = names
    except OSError:
        pass
    fd = os.open(SHARED, os.O_RDONLY)
    base = libc.mmap(None, BITS * PAGE, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    vector = (ctypes.c_ubyte * BITS)()
    if libc.mincore(ctypes.c_void_p(base), BITS * PAGE, vector) == 0:
        seen["mincore"] = _bits([v & 1 for v in vector])
    try:
        resident = []
        for bit in range(BITS):
            try:
                os.preadv(fd, [bytearray(1)], bit * PAGE, os.RWF_NOWAIT)
                resident.append(True)
            except BlockingIOError:
                resident.append(False)
        seen["nowait"] = _bits(resident)
    except OSError:
        pass
    return seen


def f(phase, token):
    return record(token) if phase == "record" else find()
