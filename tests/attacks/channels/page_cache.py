# Every way to control or probe the page cache of a file all executions share: answers the calls that
# succeeded (a candidate that passes can evict pages and tell resident ones from the others).
import ctypes
import mmap
import os

# (where every execution has a root of its own, the only host file it can open is its interpreter)
SHARED = next(p for p in (os.path.join(os.path.dirname(os.__file__), "os.py"), "/proc/self/exe") if os.path.exists(p))
NR = {"readahead": 187, "mincore": 27, "cachestat": 451, "io_setup": 206, "process_madvise": 440}  # x86_64
MADVISE = {"MADV_WILLNEED": 3, "MADV_REMOVE": 9, "MADV_MERGEABLE": 12, "MADV_COLD": 20, "MADV_PAGEOUT": 21,
           "MADV_POPULATE_READ": 22, "MADV_COLLAPSE": 25}


def f(x):
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(SHARED, os.O_RDONLY)
    worked = []
    for advice in ("POSIX_FADV_DONTNEED", "POSIX_FADV_WILLNEED", "POSIX_FADV_NOREUSE"):
        try:
            os.posix_fadvise(fd, 0, 0, getattr(os, advice))
            worked.append(advice)
        except OSError:
            pass
    for flag in ("RWF_NOWAIT", "RWF_HIPRI"):
        try:
            os.preadv(fd, [bytearray(4096)], 0, getattr(os, flag))
            worked.append("preadv2 " + flag)
        except OSError:
            pass
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    base = libc.mmap(None, 4096, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    vector = (ctypes.c_ubyte * 1)()
    if os.uname().machine == "x86_64":
        if libc.syscall(NR["mincore"], ctypes.c_void_p(base), 4096, vector) == 0:
            worked.append("mincore")
        if libc.syscall(NR["readahead"], fd, 0, 4096) == 0:
            worked.append("readahead")
        cstat = (ctypes.c_uint64 * 8)()
        rng = (ctypes.c_uint64 * 2)(0, 4096)
        if libc.syscall(NR["cachestat"], fd, rng, cstat, 0) == 0:
            worked.append("cachestat")
        ctx = ctypes.c_ulong(0)
        if libc.syscall(NR["io_setup"], 1, ctypes.byref(ctx)) == 0:
            worked.append("io_setup")
    for name, advice in MADVISE.items():
        if libc.madvise(base, 4096, advice) == 0:
            worked.append(name)
    return worked
