# Kill the parent, every process it may signal, and the harness.
import os
import signal


def f(harness_pid, canary_pid):
    result = []
    for pid in (os.getppid(), harness_pid, canary_pid, -1):
        try:
            os.kill(pid, signal.SIGKILL)
            result.append("sent")
        except OSError as exc:
            result.append(type(exc).__name__)
    return " ".join(result)
