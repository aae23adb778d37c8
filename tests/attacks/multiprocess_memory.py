# Stay under the per-process address-space limit but use 4 x 100 MiB across processes.
import os
import signal


def f(x):
    kids = []
    for _ in range(4):
        pid = os.fork()
        if pid == 0:
            block = bytearray(100 << 20)
            for i in range(0, len(block), 4096):
                block[i] = 1
            os._exit(0)
        kids.append(pid)
    killed = 0
    for pid in kids:
        _, status = os.waitpid(pid, 0)
        killed += os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    return "killed" if killed else "allocated"
