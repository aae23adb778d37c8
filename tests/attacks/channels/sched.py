# What a process may change in another of its uid without ptrace or /proc: "attack" lowers the nice
# value, narrows the CPU mask, lowers resource limits and the I/O priority of every process it can see
# but itself (in a container: the keeper and its fork server, whose state later runners inherit);
# "probe" answers its own. A later execution must probe what one before the attack did.
import ctypes
import os
import resource

IOPRIO = {"x86_64": (251, 252), "aarch64": (30, 31)}.get(os.uname().machine)


def _ioprio(pid, value=None):
    if IOPRIO is None:
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    if value is None:
        return libc.syscall(IOPRIO[1], 1, pid)
    return libc.syscall(IOPRIO[0], 1, pid, value)


def attack():
    done = []
    me = os.getpid()
    for pid in sorted(int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != me):
        changes = (("nice", lambda: os.setpriority(os.PRIO_PROCESS, pid, 17)),
                   ("cpu", lambda: os.sched_setaffinity(pid, {min(os.sched_getaffinity(0))})),
                   ("stack", lambda: resource.prlimit(pid, resource.RLIMIT_STACK, (1 << 20, 1 << 20))),
                   ("nofile", lambda: resource.prlimit(pid, resource.RLIMIT_NOFILE, (17, 17))),
                   ("ioprio", lambda: _ioprio(pid, (3 << 13) | 0) == 0 or (_ for _ in ()).throw(OSError())))
        for name, change in changes:
            try:
                change()
                done.append("%d %s" % (pid, name))
            except OSError:
                pass
    return done


def probe():
    return [os.getpriority(os.PRIO_PROCESS, 0), sorted(os.sched_getaffinity(0)), os.sched_getscheduler(0),
            _ioprio(0), [list(resource.getrlimit(getattr(resource, n))) for n in sorted(dir(resource))
                         if n.startswith("RLIMIT_")]]


def f(phase):
    return attack() if phase == "attack" else probe()
