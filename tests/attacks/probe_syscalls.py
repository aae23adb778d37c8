# Try the kernel interfaces the seccomp filter denies; answer the sorted list of those that did not fail
# with EPERM or ENOSYS (the expected value lists them all: the candidate passes only if all are reachable).
import ctypes
import errno
import os

NR = {  # x86_64
    "add_key": 248, "bpf": 321, "io_uring_setup": 425, "keyctl": 250, "perf_event_open": 298,
    "process_vm_readv": 310, "ptrace": 101, "request_key": 249, "setns": 308, "unshare": 272,
    "userfaultfd": 323,
}
ARGS = {
    "add_key": (b"user", b"ag-probe", b"x", 1, -4),  # into the user keyring
    "keyctl": (0, -4, 1),  # KEYCTL_GET_KEYRING_ID of the user keyring, create it
    "request_key": (b"user", b"ag-probe", None, 0),
    "io_uring_setup": (1, None),  # EFAULT if reachable
    "userfaultfd": (0,),
    "bpf": (0, None, 0),  # EFAULT/EINVAL if reachable
    "perf_event_open": (None, 0, -1, -1, 0),
    "process_vm_readv": (1, None, 0, None, 0, 0),
    "ptrace": (0x4206, 1, 0, 0),  # PTRACE_SEIZE pid 1
    "setns": (0, 0),  # EBADF if reachable
    "unshare": (0x00020000,),  # CLONE_NEWNS
}


def f(x):
    if os.uname().machine != "x86_64":
        return "not x86_64"
    libc = ctypes.CDLL(None, use_errno=True)
    reachable = []
    for name, nr in NR.items():
        ctypes.set_errno(0)
        rc = libc.syscall(nr, *ARGS[name])
        err = ctypes.get_errno()
        if rc >= 0 or err not in (errno.EPERM, errno.ENOSYS):
            reachable.append(name)
    return sorted(reachable)
