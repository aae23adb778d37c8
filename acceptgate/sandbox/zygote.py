# acceptgate fork server ("zygote"): trusted code that runs inside one slot's bubblewrap sandbox,
# before any candidate. Standard library only; started as
#     python3 -I -S -B -c <this file> <control fd> <tmpfs bytes> <runner source> clone|fork <filter hex>
#
# Per execution it builds a fresh environment, then forks the candidate runner into it:
#
#   zygote Z (slot userns S, no capabilities, non-dumpable, child subreaper)
#     `- I: made by one clone(new user, pid, mount, ipc, uts namespaces) -- or, where the
#          syscall number is not known here, by a child C that unshares them, forks I and exits
#          (I is then adopted by Z). pid 1 of its pid namespace; maps uid/gid 65534 -> 65534,
#          mounts a new /proc (/proc/sys and co. read-only), fresh tmpfs /sandbox, /tmp, /dev/shm,
#          sets user.max_user_namespaces=0, drops every capability, loads the seccomp
#          filter (BPF built by the harness with libseccomp, see seccomp.py), waits for the go.
#            `- R: the runner (runner.py's _main), uid 65534, no capabilities, cwd /sandbox.
#
# I is built ahead of time (the "spare", right after the previous execution has ended), so a run
# starts with one fork. When R ends, I writes R's wait status to the harness's status pipe and exits;
# as pid 1 its exit kills every process left in the namespace, and the namespaces (files, IPC
# objects, the pid counter) go with it. Keyrings are the host uid's, not a namespace's: the
# seccomp filter I loads denies the keyring calls.
# The network namespace is the slot's (bubblewrap's: loopback only), not one per execution: a new one
# costs a fifth of an execution's CPU, and nothing of an execution can stay in it. The filter denies
# socket(), accept() and sendmsg(), so an execution's only sockets are socketpair()s, held by its own
# processes alone (no descriptor can be in flight), and gone with them. Z proves it before every
# environment: the namespace must hold no socket at all then (network_state; Z's control socket is the
# harness's namespace's, the spare's socketpair is made after the check), or Z builds nothing more and
# the harness discards the slot.
# Nothing of one execution can reach the next: R never sees Z (another pid namespace), holds none of
# Z's descriptors, has no capability anywhere, and cannot signal or ptrace I (pid-namespace init,
# non-dumpable).
#
# Control socket (SOCK_SEQPACKET, fd given in argv): the harness sends b"run" with three descriptors
# [runner stdin (read end), runner stdout (write end), status pipe (write end)]; Z answers
# b"started" with a pidfd of I (kill it to end the execution; readable once every process of the
# execution is gone), or b"error <text>". Z sends b"ready" once, when the first spare is built.
import array
import ctypes
import os
import select
import socket
import struct
import sys
import time

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
NAMESPACES = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18

SIGCHLD = 17
# clone(2) with the namespace flags and no new stack behaves like fork(); None: use fork + unshare.
SYS_CLONE = {"x86_64": 56, "aarch64": 220}.get(os.uname().machine)
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
CAPABILITY_VERSION_3 = 0x20080522

UID = 65534
# Imported once here, before any candidate, so that no execution pays for them: what the runner needs,
# and the standard modules candidates import most (typing alone costs ~10 ms per fresh interpreter).
# Each execution gets a copy-on-write copy; random reseeds itself in every forked child.
PRELOAD = ("errno", "marshal", "resource", "fcntl", "typing", "re", "collections", "math", "itertools", "functools",
           "heapq", "bisect", "string", "operator", "copy", "hashlib", "fractions", "decimal", "statistics",
           "random", "datetime", "json")
WORKDIR = "/sandbox"
PROC_COVERS = ("sys", "sysrq-trigger", "irq", "bus")  # as bubblewrap's --proc: read-only
SPARE_TRIES = 3

libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def _check(rc, what):
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, what + ": " + os.strerror(err))


def prctl(option, arg=0):
    _check(libc.prctl(option, arg, 0, 0, 0), "prctl %d" % option)


def mount(source, target, fstype, flags, data=None):
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    _check(libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), "mount " + target)


def drop_capabilities():
    """No capability left in any set; no way to gain one by exec."""
    for cap in range(LAST_CAP + 1):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # EPERM without CAP_SETPCAP (the fork server itself)
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header, data = _CapHeader(CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    _check(libc.capset(ctypes.byref(header), data), "capset")
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    with open("/proc/self/status") as f:
        caps = [line.split()[1] for line in f if line.startswith(("CapInh", "CapPrm", "CapEff", "CapAmb"))]
    if len(caps) != 4 or any(int(c, 16) for c in caps):
        raise OSError("capabilities still held: " + " ".join(caps))


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def load_filter(program):
    """The syscall filter on this process and all it forks (no_new_privs is already set)."""
    code = ctypes.create_string_buffer(program, len(program))
    prog = _Program(len(program) // 8, ctypes.cast(code, ctypes.c_void_p))
    _check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0), "seccomp")


def write_file(path, text):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def send(sock, data, fds=()):
    if not fds:  # send(), not sendmsg: the execution's init sends "ready" under the filter (SENDMSG denied)
        sock.send(data)
        return
    sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])


def recv(sock, maxfds=3):
    fds = array.array("i")
    data, ancdata, _, _ = sock.recvmsg(4096, socket.CMSG_SPACE(maxfds * fds.itemsize))
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    return data, list(fds)


def close_fds_except(keep):
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def close_all(fds):
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


# --- the per-execution init (I) and the runner (R) ------------------------------------------------

def build_environment():
    """In I, with every capability of the fresh user namespace: the execution's private view."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    # No user namespaces below this one: the candidate gets no capabilities anywhere.
    write_file("/proc/sys/user/max_user_namespaces", "0")
    for name in PROC_COVERS:
        path = "/proc/" + name
        if os.path.exists(path):
            mount(path, path, None, MS_BIND | MS_REC)
            mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for path, mode in ((WORKDIR, "0700"), ("/tmp", "1777"), ("/dev/shm", "1777")):
        mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "size=%d,mode=%s" % (SCRATCH_BYTES, mode))
    drop_capabilities()


def init_main(go):
    """I: pid 1 of the execution's pid namespace. Never returns."""
    code = 1
    try:
        prctl(PR_SET_DUMPABLE, 0)  # the runner must not ptrace or read the init
        build_environment()
        load_filter(FILTER)  # after the mounts that need them: mount and unshare are denied from here on
        send(go, b"ready")
        data, fds = recv(go)
        go.close()
        if data != b"go" or len(fds) != 3:
            close_all(fds)
            os._exit(2)
        stdin_fd, stdout_fd, status_fd = fds
        runner = os.fork()
        if runner == 0:
            become_runner(stdin_fd, stdout_fd)
        close_all([stdin_fd, stdout_fd])
        status = reap_until(runner)
        os.write(status_fd, struct.pack("=i", status))
        code = 0
    except BaseException:
        code = 3
    os._exit(code)


def reap_until(pid):
    """Reap every child (orphans come to pid 1) until pid ends; its wait status."""
    while True:
        try:
            done, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return -1
        except InterruptedError:
            continue
        if done == pid:
            return status


def become_runner(stdin_fd, stdout_fd):
    """R: only the protocol pipes, then the runner's own main. Never returns."""
    code = 1
    try:
        os.dup2(stdin_fd, 0)
        os.dup2(stdout_fd, 1)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 2)
        os.closerange(3, MAX_FD)
        os.chdir(WORKDIR)
        prctl(PR_SET_DUMPABLE, 1)  # like any fresh process (the init above stays non-dumpable)
        try:
            RUNNER["_main"]()
            code = 0
        except EOFError:
            code = 0
        except SystemExit as exc:  # the candidate's sys.exit(): the code it asked for
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        code = 1
    os._exit(code & 0xFF)


# --- building the spare: C and I ------------------------------------------------------------------

class Spare:
    def __init__(self, pid, pidfd, go):
        self.pid, self.pidfd, self.go = pid, pidfd, go

    def discard(self):
        try:
            os.kill(self.pid, 9)
        except OSError:
            pass
        self.go.close()
        close_all([self.pidfd])


def clone_init(ctl, z_end, i_end):
    """I straight from Z: one clone() makes the namespaces and the process (no C). Returns its pid."""
    pid = libc.syscall(SYS_CLONE, NAMESPACES | SIGCHLD, 0, 0, 0, 0)
    if pid < 0:
        raise OSError(ctypes.get_errno(), "clone")
    if pid == 0:  # I, pid 1 of the new namespaces, with every capability of its new user namespace
        try:
            ctl.close(), z_end.close()
            close_fds_except((0, 1, 2, i_end.fileno()))  # e.g. pidfds of running executions
            prctl(PR_SET_DUMPABLE, 1)  # to write its own uid_map (root's while non-dumpable)
            write_file("/proc/self/setgroups", "deny")
            write_file("/proc/self/uid_map", "%d %d 1" % (UID, UID))
            write_file("/proc/self/gid_map", "%d %d 1" % (UID, UID))
        except BaseException:
            os._exit(4)
        init_main(i_end)
    return pid


class NotEmpty(Exception):
    """Something is left in the slot's network namespace: no environment is built in it again."""


def network_state():
    """What an execution could leave in the slot's network namespace, counted by the kernel for this
    namespace: sockets in use (every family), and per protocol those in use and in TIME_WAIT."""
    state = []
    for name in ("sockstat", "sockstat6"):
        try:
            with open("/proc/net/" + name) as f:
                lines = f.read().splitlines()
        except FileNotFoundError:  # no IPv6 in this kernel
            continue
        for line in lines:  # "sockets: used 1", "TCP: inuse 0 orphan 0 tw 0 alloc 0 mem 0", ...
            words = line.split()
            # (orphan, alloc and mem are the machine's, not the namespace's: they move with the host)
            state += [(words[0], words[i], words[i + 1]) for i in range(1, len(words) - 1, 2)
                      if words[i] in ("used", "inuse", "tw")]
    return state


def check_network():
    """Raise NotEmpty unless the namespace holds no socket. The previous execution's processes are all
    gone (its init has exited), and with them its sockets; but a socket's memory may be freed after a
    grace period of the kernel's (a discarded spare's init still dying, bubblewrap's netlink socket
    that set up the loopback), hence a wait of up to NETWORK_SETTLE seconds before concluding."""
    deadline = time.monotonic() + NETWORK_SETTLE
    while True:
        now = network_state()
        if not any(count != "0" for _, _, count in now):
            return
        if time.monotonic() >= deadline:
            raise NotEmpty("the slot's network namespace holds sockets no execution may leave: %r" % (now,))
        reap()
        select.select([], [], [], 0.01)


def build_spare(ctl):
    check_network()
    z_end, i_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    if SYS_CLONE:
        try:
            init = clone_init(ctl, z_end, i_end)
        except OSError:  # e.g. the process cap
            z_end.close(), i_end.close()
            return None
        i_end.close()
        return _await_ready(init, z_end)
    info_r, info_w = os.pipe()
    try:
        child = os.fork()
    except OSError:  # e.g. the process cap, during a fork bomb in the running execution
        z_end.close(), i_end.close(), close_all([info_r, info_w])
        return None
    if child == 0:  # C
        code = 1
        try:
            ctl.close(), z_end.close(), os.close(info_r)
            close_fds_except((0, 1, 2, i_end.fileno(), info_w))  # e.g. pidfds of running executions
            prctl(PR_SET_DUMPABLE, 1)  # to write its own uid_map (owned by root when non-dumpable)
            _check(libc.unshare(NAMESPACES), "unshare")
            write_file("/proc/self/setgroups", "deny")
            write_file("/proc/self/uid_map", "%d %d 1" % (UID, UID))
            write_file("/proc/self/gid_map", "%d %d 1" % (UID, UID))
            init = os.fork()
            if init == 0:
                os.close(info_w)
                init_main(i_end)
            os.write(info_w, struct.pack("=i", init))
            code = 0
        finally:
            os._exit(code)
    i_end.close(), os.close(info_w)
    os.waitpid(child, 0)
    raw = os.read(info_r, 4)
    os.close(info_r)
    if len(raw) != 4:
        z_end.close()
        return None
    return _await_ready(struct.unpack("=i", raw)[0], z_end)


def _await_ready(init, z_end):
    pidfd = os.pidfd_open(init)
    spare = Spare(init, pidfd, z_end)
    try:
        ready, _ = recv(z_end, 0)
    except OSError:
        ready = b""
    if ready != b"ready":
        spare.discard()
        return None
    return spare


def reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def serve(ctl):
    try:
        spare = build_spare(ctl)
    except NotEmpty as exc:
        send(ctl, error_text(exc))
        return
    if spare is None:
        send(ctl, b"error cannot build the execution environment")
        return
    send(ctl, b"ready")
    try:
        serve_runs(ctl, spare)
    except NotEmpty as exc:  # refuse every request from now on: the harness discards the slot
        refuse(ctl, exc)


def refuse(ctl, why):
    while True:
        data, fds = recv(ctl)
        close_all(fds)
        if not data:
            return
        send(ctl, error_text(why))


def error_text(why):
    return ("error " + str(why)).encode("utf-8", "replace")[:4000]


def serve_runs(ctl, spare):
    running = []  # pidfds of inits still alive, to reap them (and free their pids) promptly
    while True:
        ready, _, _ = select.select([ctl] + running, [], [])
        if running and any(fd in ready for fd in running):
            reap()
            for fd in [fd for fd in running if fd in ready]:
                running.remove(fd)
                os.close(fd)
            # The next environment is built once the execution is over, never beside it: while one
            # runs, the slot's cgroup holds only it and the fixed residents (an exact process cap).
            if spare is None and not running:
                spare = build_spare(ctl)
        if ctl not in ready:
            continue
        data, fds = recv(ctl)
        if not data:  # the harness closed the slot
            return
        if data != b"run" or len(fds) != 3:
            close_all(fds)
            send(ctl, b"error bad request")
            continue
        try:
            for _ in range(SPARE_TRIES):
                if spare is not None:
                    break
                reap()
                spare = build_spare(ctl)
        except NotEmpty as exc:  # answered here, then every later request is refused (serve)
            close_all(fds)
            send(ctl, error_text(exc))
            raise
        if spare is None:
            close_all(fds)
            send(ctl, b"error cannot build the execution environment")
            continue
        try:
            # The harness puts this fork server on the CPU of the thread that drives the execution
            # (affinity.py); the environment may have been built before that: it follows now, and its
            # runner, forked after "go", inherits it.
            os.sched_setaffinity(spare.pid, os.sched_getaffinity(0))
        except OSError:
            pass
        try:
            send(spare.go, b"go", fds)
        except OSError:
            spare.discard()
            spare = None
            close_all(fds)
            send(ctl, b"error the execution environment died")
            continue
        close_all(fds)
        spare.go.close()
        send(ctl, b"started", [spare.pidfd])
        running.append(spare.pidfd)
        spare = None


def main():
    global RUNNER, MAX_FD, SCRATCH_BYTES, LAST_CAP, SYS_CLONE, FILTER
    ctl_fd, SCRATCH_BYTES, runner_source = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    FILTER = bytes.fromhex(sys.argv[5])
    if not FILTER:
        raise SystemExit("no syscall filter given")
    if sys.argv[4:5] == ["fork"]:
        SYS_CLONE = None
    # A /proc of our own on top of bubblewrap's (whose read-only covers would make the kernel refuse
    # each execution's new /proc), then no capability is kept here.
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    drop_capabilities()
    prctl(PR_SET_DUMPABLE, 0)
    prctl(PR_SET_CHILD_SUBREAPER, 1)  # the inits C leaves behind are ours to watch and reap
    os.chdir("/")
    MAX_FD = os.sysconf("SC_OPEN_MAX")
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            LAST_CAP = int(f.read())
    except (OSError, ValueError):
        LAST_CAP = 63
    for name in PRELOAD:
        try:
            __import__(name)
        except ImportError:
            pass
    RUNNER = {"__name__": "acceptgate_runner", "__builtins__": __builtins__}
    exec(compile(runner_source, "runner.py", "exec"), RUNNER)
    ctl = socket.socket(fileno=ctl_fd)
    try:
        serve(ctl)
    except ConnectionError:
        pass


SCRATCH_BYTES = 32 * 1024 * 1024  # per tmpfs; the harness passes bwrap.SCRATCH_BYTES
RUNNER = {}
FILTER = b""
MAX_FD = 1024
LAST_CAP = 63
NETWORK_SETTLE = 2.0

if __name__ == "__main__":
    main()
