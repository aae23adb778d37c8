# Signal pid 1 of its namespace (the execution's init, or the keeper) with SIGINT and SIGTERM.
import os
import signal
import time


def f(x):
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            os.kill(1, sig)
        except OSError:
            pass
    time.sleep(0.5)
    return x
