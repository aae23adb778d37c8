# Leave a process behind in a new session (out of the runner's process group), named by tag.
import os
import time


def f(tag):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            try:
                with open("/proc/self/comm", "w") as fh:
                    fh.write(tag)
            finally:
                time.sleep(120)
        os._exit(0)
    os.wait()
    return "spawned"
