# The page cache without any denied call: "load" faults in one page of a shared file per set bit of
# the token (MADV_RANDOM: no readahead around it); "look" tells which of those pages are resident
# without loading them -- a two-page mapping [p, p+1], a touch of p+1, and the kernel's fault-around
# maps p too only if p was resident, which /proc/self/smaps counts. Answers the token it read back.
import ctypes
import mmap
import os

STDLIB = os.path.dirname(os.__file__)
# ~750 KB, read by nothing but pydoc; where every execution has a root of its own, the only host file it
# can open is its interpreter
SHARED = next(p for p in (os.path.join(STDLIB, "pydoc_data", "topics.py"), "/proc/self/exe") if os.path.exists(p))
PAGE = mmap.PAGESIZE
BITS = 16
SPACING = 8  # pages between two bits' pages


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    return libc


def _map(libc, fd, page, pages):
    addr = libc.mmap(None, pages * PAGE, mmap.PROT_READ, mmap.MAP_PRIVATE, fd, page * PAGE)
    libc.madvise(ctypes.c_void_p(addr), pages * PAGE, 1)  # MADV_RANDOM
    return addr


def _rss_kb(addr):
    start = "%x-" % addr
    lines = open("/proc/self/smaps").read().splitlines()
    for i, line in enumerate(lines):
        if line.startswith(start):
            for follow in lines[i + 1:]:
                if follow.startswith("Rss:"):
                    return int(follow.split()[1])
    return -1


def load(token):
    libc = _libc()
    fd = os.open(SHARED, os.O_RDONLY)
    for bit in range(BITS):
        if token >> bit & 1:
            addr = _map(libc, fd, bit * SPACING, 1)
            ctypes.string_at(addr, 1)
            libc.munmap(ctypes.c_void_p(addr), PAGE)
    return "loaded"


def look():
    libc = _libc()
    fd = os.open(SHARED, os.O_RDONLY)
    token = 0
    for bit in range(BITS):
        page = bit * SPACING
        for _ in range(3):  # fault-around skips a page that is busy (locked) at that instant: ask again
            addr = _map(libc, fd, page, 2)
            ctypes.string_at(addr + PAGE, 1)  # touch p+1; p is mapped around it only if resident
            seen = _rss_kb(addr) >= 2 * PAGE // 1024
            libc.munmap(ctypes.c_void_p(addr), 2 * PAGE)
            if seen:
                token |= 1 << bit  # p was resident
                break
    return token


def f(phase, token):
    return load(token) if phase == "load" else look()
