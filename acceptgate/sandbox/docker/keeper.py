# acceptgate container keeper: PID 1 of a warm sandbox container (standard library only).
#
# It starts one execution at a time, relays bytes between the host and its runner (attach channel),
# and afterwards checks what the execution left: files in the container's writable tmpfs mounts, SysV
# IPC objects, limit events. It then reports the runner's exit status and any such problem (the host
# replaces a container with any problem).
#
# Executions come from the fork server acceptgate's local backend runs in each bubblewrap slot
# (zygote.py): the keeper starts it once, before any execution data exists, in user, mount, pid,
# network, ipc and uts namespaces of its own (the container's uid mapped to 65534, CAP_SYS_ADMIN in
# them), where bubblewrap would. For each execution it makes fresh user, pid, mount, ipc and uts
# namespaces and a root of the execution's own (a tmpfs: /proc of its pid namespace, /sandbox, /tmp,
# /dev/shm, five device nodes), from which no directory of the image is reachable by name; the
# standard library comes from memory. So nothing of the image's filesystem caches, nor of an earlier
# execution, is visible to a later one, and every process of an execution ends with its init. The
# container needs the engine's masked /proc paths off (the new /proc of each execution is refused
# otherwise) and a seccomp profile that leaves the namespace and mount calls to the fork server (each
# runner denies them to the candidate: seccomp.py). Where the fork server cannot start, runners are
# started with fork + exec (`python3 -I -S -B -c <runner>`) in the container's own filesystem, and
# the hello says so (the host names it in isolation.not_enforced).
#
# Why the candidate (same uid) cannot tamper with the keeper or the fork server: it sees neither (its
# own pid namespace); both are non-dumpable, so they cannot be ptraced and their /proc files cannot be
# opened. A fork server killed or stopped is noticed and the container is replaced. The runner talks
# to pipes; it never holds the container's stdin/stdout, so it cannot forge keeper frames.
#
# The host's channel: the container's stdin/stdout (through the engine's attach), or, when the engine
# runs on the host's machine, a unix socket the host listens on in a directory it bind-mounted
# (argv: socket:<path>), which the keeper connects to before any execution exists; the host accepts
# that one connection and removes the name, so no process of the container can connect again.
# Frames on that channel: 1 byte kind + 4 bytes big-endian length + payload.
#   host -> keeper: b"S" start an execution, b"I" bytes for the runner's stdin, b"K" kill it now.
#   keeper -> host: b"H" hello (JSON), b"O" bytes from the runner's stdout, b"X" finished (JSON).
# On the socket the runner's pipes are the host's own: b"S" comes with two descriptors (SCM_RIGHTS),
# the read end of the runner's stdin and the write end of its stdout, which the keeper hands to the
# runner; the calls and answers then go between the harness and the runner with no relay, and there
# are no b"I" and b"O" frames. The runner never holds the socket, so it cannot forge a keeper frame.
import json
import os
import resource
import select
import signal
import socket
import struct
import sys
import time

WRITABLE = ("/sandbox", "/tmp", "/dev/mqueue", "/dev/shm")
OOM_FILES = ("/sys/fs/cgroup/memory/memory.oom_control", "/sys/fs/cgroup/memory.events")
PIDS_FILES = ("/sys/fs/cgroup/pids/pids.events", "/sys/fs/cgroup/pids.events")
CHUNK = 1 << 16
RUNNER_FLAGS = ["-s", "-P", "-S", "-B", "-c"]  # -I less -E: PYTHONHASHSEED is read (RUNNER_ENV)
RUNNER_ENV = {"PYTHONHASHSEED": "0"}  # backend.HASH_SEED: every runner hashes strings alike
SPAWN_TIMEOUT = 5.0
IN_FD, OUT_FD = 0, 1  # the host's channel (the socket's descriptor, twice, in socket mode)
CHANNEL = None  # socket mode: the connected socket (the runner's pipes come through it)
RUNNER_SOURCE = ""  # main() sets it


def _read(path):
    """A small /proc or /sys file's bytes: os calls, not a text file object (read on every execution)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = [os.read(fd, 65536)]
        while chunks[-1]:  # a /proc file may come in parts
            chunks.append(os.read(fd, 65536))
        return b"".join(chunks)
    finally:
        os.close(fd)


def _counter(paths, key):
    key = key.encode()
    for path in paths:
        try:
            text = _read(path)
        except OSError:
            continue
        for line in text.splitlines():
            name, _, value = line.partition(b" ")
            if name == key:
                return int(value)
    return None


RLIMITS = tuple(getattr(resource, n) for n in sorted(dir(resource)) if n.startswith("RLIMIT_"))
IOPRIO_GET = {"x86_64": 252, "aarch64": 31}.get(os.uname().machine)  # ioprio_get(2): no libc wrapper


_libc_handle = []


def _libc():
    """The C library through ctypes, loaded once (None without ctypes)."""
    if not _libc_handle:
        try:
            import ctypes

            _libc_handle.append(ctypes.CDLL(None, use_errno=True))
        except Exception:  # noqa: BLE001
            _libc_handle.append(None)
    return _libc_handle[0]


def _ioprio(pid):
    libc = _libc()
    if IOPRIO_GET is None or libc is None:
        return None
    return libc.syscall(IOPRIO_GET, 1, pid)  # IOPRIO_WHO_PROCESS


def _sched_state(pids):
    """What a process of the same uid may change in another without ptrace or /proc: its nice value,
    CPU mask, scheduling policy, I/O priority and resource limits. The fork server's are inherited by
    every runner it forks later, the keeper's by its exec fallback: a change would reach a later
    execution, so the container is not reused."""
    state = {}
    for pid in sorted(pids):
        try:
            state[pid] = (os.getpriority(os.PRIO_PROCESS, pid), sorted(os.sched_getaffinity(pid)),
                          os.sched_getscheduler(pid), _ioprio(pid), [resource.prlimit(pid, r) for r in RLIMITS])
        except OSError:
            state[pid] = None
    return state


def _follow(pid):
    """The host sets the keeper's CPU mask before an execution (the CPU of the thread that drives it); a
    runner started ahead of that takes it now."""
    try:
        os.sched_setaffinity(pid, os.sched_getaffinity(0))
    except OSError:
        pass


def _prctl_dumpable(value):
    """Set PR_SET_DUMPABLE; return the flag read back (None without ctypes)."""
    libc = _libc()
    if libc is None:
        return None
    try:
        libc.prctl(4, value, 0, 0, 0)  # PR_SET_DUMPABLE
        return libc.prctl(3, 0, 0, 0, 0)  # PR_GET_DUMPABLE
    except Exception:
        return None


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except BlockingIOError:
            select.select([], [fd], [])
            continue
        view = view[n:]


def send(kind, payload=b""):
    _write_all(OUT_FD, kind + struct.pack(">I", len(payload)) + payload)


def _empty_dir(top):
    """Remove everything under top (owned by our uid); return names that would not go."""
    try:
        names = os.listdir(top)
    except OSError:
        return []
    for name in names:
        path = os.path.join(top, name)
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                os.chmod(path, 0o700)  # a candidate may have taken its own permissions away
                _empty_dir(path)
                os.rmdir(path)
            else:
                os.unlink(path)
        except OSError:
            pass
    try:
        return os.listdir(top)
    except OSError:
        return []


def _ipc_objects():
    count = 0
    for name in ("shm", "msg", "sem"):
        try:
            count += max(0, len(_read("/proc/sysvipc/" + name).splitlines()) - 1)
        except OSError:
            pass
    return count


def _other_pids(exclude):
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in exclude]


def _kill_all(keep):
    """SIGKILL every process but those in keep (us, the zygote), again until none is left; reap."""
    reaped = {}
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        victims = _other_pids(keep)
        if not victims:
            break
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _reap(reaped)
        time.sleep(0.0005)
    _reap(reaped)
    return reaped


def _reap(into):
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if not pid:
            return
        into[pid] = status


# -- the runner process -----------------------------------------------------------------------------
def _runner_fds(in_r, out_w):
    os.setsid()
    os.dup2(in_r, 0)
    os.dup2(out_w, 1)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    os.closerange(3, 4096)
    os.chdir("/sandbox")


def _oom_first():
    try:  # os-level calls: no file objects for a forked runner to create (each is a page it copies)
        fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
        try:
            os.write(fd, b"1000")  # the memory limit takes the runner, never the keeper
        finally:
            os.close(fd)
    except OSError:
        pass


def spawn_exec(python, runner, pipes=None):
    """Fork + exec a fresh interpreter for the runner; returns (pid, to_child, from_child, None) (as
    every spawn: the last is a waiting runner's socket). With ``pipes`` (the host's: stdin's read end,
    stdout's write end) the runner gets those and the keeper none: (pid, None, None, None)."""
    if pipes is None:
        in_r, to_child = os.pipe()
        from_child, out_w = os.pipe()
    else:
        (in_r, out_w), to_child, from_child = pipes, None, None
    pid = os.fork()
    if pid == 0:
        try:
            _oom_first()
            _runner_fds(in_r, out_w)
            os.execve(python, [python, *RUNNER_FLAGS, runner], RUNNER_ENV)
        finally:
            os._exit(127)
    if pipes is None:  # the host's are closed by the caller
        os.close(in_r)
        os.close(out_w)
    return pid, to_child, from_child, None


# -- the fork server: zygote.py in namespaces of its own, as bubblewrap holds it on the local backend --
CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
CAP_SYS_ADMIN = 21
SERVER_START = 60.0  # the fork server's first environment: its image of the standard library built, modules imported


def _write_proc(name, text):
    fd = os.open("/proc/self/" + name, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _raise_ambient(libc, cap):
    """Keep ``cap`` across the exec of the fork server (an ambient capability, as bubblewrap's --cap-add)."""
    import ctypes

    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()  # (effective, permitted, inheritable) x 2 words
    if libc.capget(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    data[2 + 3 * (cap // 32)] |= 1 << (cap % 32)
    if libc.capset(header, data) != 0 or libc.prctl(47, 2, cap, 0, 0) != 0:  # PR_CAP_AMBIENT_RAISE
        raise OSError(ctypes.get_errno(), "ambient capability")


def _stdlib_image(zygote, given=""):
    """A memfd holding the standard library's image (zygote.py index), read by the fork server: a copy of
    the one the host left beside the socket (``given``: built there for this very interpreter), else
    built here."""
    fd = os.memfd_create("acceptgate-stdlib", 0)
    if given and os.path.isfile(given):
        with open(given, "rb") as f:
            _write_all(fd, f.read())
        os.lseek(fd, 0, os.SEEK_SET)
        return fd
    pid = os.fork()
    if pid == 0:
        try:
            os.dup2(fd, 1)
            stdlib = os.path.dirname(os.__file__)
            os.execve(sys.executable, [sys.executable, "-I", "-S", "-B", "-c", zygote, "index", stdlib], {})
        finally:
            os._exit(127)
    _, status = os.waitpid(pid, 0)
    if status != 0 or os.fstat(fd).st_size == 0:
        raise OSError("the standard library's image could not be built")
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _start_server(ctl_fd, pid_w, args):
    """In a child of the keeper: user, mount, pid, network, ipc and uts namespaces of its own (this uid
    mapped to 65534), then zygote.py as pid 1 of that pid namespace with CAP_SYS_ADMIN in it: the slot
    bubblewrap makes on the local backend. Its pid (in the keeper's namespace) goes to pid_w. Never returns."""
    libc = _libc()
    uid, gid = os.getuid(), os.getgid()
    _prctl_dumpable(1)  # (the keeper's flag): our /proc/self files ours to write (the id maps); no candidate exists yet
    flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
    if libc is None or libc.unshare(flags) != 0:
        os._exit(126)
    _write_proc("setgroups", "deny")
    _write_proc("uid_map", "65534 %d 1" % uid)
    _write_proc("gid_map", "65534 %d 1" % gid)
    pid = os.fork()
    if pid:  # the server is adopted by the keeper (init): this middle process goes
        os.write(pid_w, str(pid).encode())
        os._exit(0)
    os.close(pid_w)
    zygote, filter_hex, scratch, preload, given = args
    image = _stdlib_image(zygote, given)
    os.set_inheritable(image, True)
    _raise_ambient(libc, CAP_SYS_ADMIN)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # the container's stdin/stdout (the attach channel) are the keeper's alone
        os.dup2(null, fd)
    low = 3
    for fd in sorted((ctl_fd, image)):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 4096)
    argv = [sys.executable, *RUNNER_FLAGS, zygote, str(ctl_fd), scratch, RUNNER_SOURCE, filter_hex, preload,
            str(image)]
    os.execve(sys.executable, argv, RUNNER_ENV)


def dynload_modules(skipped):
    """The standard library's extension modules (lib-dynload), but for the skipped ones."""
    try:
        names = os.listdir(os.path.join(os.path.dirname(os.__file__), "lib-dynload"))
    except OSError:
        return []
    return sorted({n.split(".")[0] for n in names if n.endswith(".so")} - set(skipped))


class ForkServer:
    """zygote.py, started once before any execution: every runner it forks is in fresh user, pid, mount,
    ipc and uts namespaces and a root of its own (a tmpfs), so nothing of the image's filesystem, nor of
    an earlier execution, is reachable by name."""

    def __init__(self, zygote, filter_hex, scratch, preload, given=""):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        os.set_inheritable(theirs.fileno(), True)
        pid_r, pid_w = os.pipe()
        child = os.fork()
        if child == 0:
            try:
                ours.close()
                os.close(pid_r)
                _start_server(theirs.fileno(), pid_w, (zygote, filter_hex, scratch, preload, given))
            finally:
                os._exit(127)
        theirs.close()
        os.close(pid_w)
        data = os.read(pid_r, 32)
        os.close(pid_r)
        os.waitpid(child, 0)
        self.pid = int(data) if data.isdigit() else None
        self.sock = ours
        ours.settimeout(SERVER_START)
        try:
            ready = ours.recv(4096) if self.pid else b"no fork server"
        except OSError as exc:
            ready = str(exc).encode()
        if ready != b"ready":
            ours.close()
            raise OSError("the fork server did not start: " + ready.decode("utf-8", "replace")[:200])
        ours.settimeout(SPAWN_TIMEOUT)

    def run(self, stdin_r, stdout_w, status_w):
        """A new execution on these descriptors: the pidfd of its init (readable once all of it is gone)."""
        socket.send_fds(self.sock, [b"run"], [stdin_r, stdout_w, status_w])
        msg, fds, _, _ = socket.recv_fds(self.sock, 4096, 1)
        if msg != b"started" or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            raise OSError("fork server: " + msg.decode("utf-8", "replace")[:200])
        return fds[0]

    def healthy(self):
        """Alive and not stopped (a SIGCONT first), and silent (it never speaks unasked)."""
        try:
            os.kill(self.pid, signal.SIGCONT)
            pid, _ = os.waitpid(self.pid, os.WNOHANG)
        except (ProcessLookupError, ChildProcessError):
            return False
        return pid == 0 and not select.select([self.sock], [], [], 0)[0]


# -- one execution --------------------------------------------------------------------------------
class Execution:
    """One runner: with pipes of the keeper's (relayed as b"I"/b"O" frames), or waiting for the host's
    (``waiting``: its socket; start() hands them over), or given the host's at its start (to_child and
    from_child None: nothing to relay)."""

    def __init__(self, spawn):
        self.begin()
        self.pid, self.to_child, self.from_child, self.waiting = spawn()
        for fd in (self.to_child, self.from_child):
            if fd is not None:
                os.set_blocking(fd, False)
        self.pending = bytearray()
        self.out_open = self.from_child is not None
        self.status = None
        try:
            self.pidfd = os.pidfd_open(self.pid)
        except (AttributeError, OSError):
            self.pidfd = None
        self.watch_fd = self.pidfd  # readable once the runner has ended

    def begin(self):
        """Start counting limit events: at the execution's start, not at its (pre)spawn."""
        self.oom_before = _counter(OOM_FILES, "oom_kill")
        self.pids_before = _counter(PIDS_FILES, "max")

    def start(self, pipes):
        """A waiting runner gets the host's pipes (its go); a runner that is gone leaves its poll to say."""
        waiting, self.waiting = self.waiting, None
        try:
            socket.send_fds(waiting, [b"g"], pipes)
        except OSError:
            pass
        finally:
            waiting.close()

    def poll(self):
        if self.status is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # not adopted yet (its zygote parent is still exiting)
                return False
            if pid:
                self.status = status
        return self.status is not None

    def pump_out(self):
        """Relay one chunk the runner wrote; False at EOF (then it is no longer watched)."""
        try:
            data = os.read(self.from_child, CHUNK)
        except BlockingIOError:
            return True
        except OSError:
            data = b""
        if not data:
            self.out_open = False
            return False
        send(b"O", data)
        return True

    def drain(self):
        """After every writer is gone: relay what is still in the pipe, up to EOF."""
        deadline = time.monotonic() + 1.0
        while self.out_open and time.monotonic() < deadline:
            ready, _, _ = select.select([self.from_child], [], [], 0.1)
            if ready:
                self.pump_out()

    def pump_in(self):
        try:
            n = os.write(self.to_child, self.pending)
        except BlockingIOError:
            return
        except OSError:  # the runner closed its stdin: drop what it will never read
            n = len(self.pending)
        del self.pending[:n]

    def close(self):
        if self.waiting is not None:
            self.waiting.close()
            self.waiting = None
        for fd in (self.to_child, self.from_child, self.pidfd):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass

    def finish(self, killed, keep):
        """Kill and clean everything but the processes in keep; report; True if the container is clean."""
        leftovers = len(_other_pids(keep | {self.pid}))
        reaped = _kill_all(keep)
        if self.status is None and self.pid in reaped:
            self.status = reaped[self.pid]
        if not killed:
            self.drain()
        self.close()
        report = _report(self.status, killed, self.oom_before, self.pids_before)
        if leftovers:
            report["problems"].append(f"{leftovers} other processes were running")
        survivors = _other_pids(keep)
        if survivors:
            report["problems"].append(f"{len(survivors)} processes survived SIGKILL")
        return report


def _report(status, killed, oom_before, pids_before):
    """The end report of an execution: its exit, and what it left in the container (files in the
    writable mounts are removed, IPC objects counted, limit events compared with their start)."""
    left = []
    for top in WRITABLE:
        left += [top + "/" + n for n in _empty_dir(top)]
    ipc = _ipc_objects()
    oom_after = _counter(OOM_FILES, "oom_kill")
    pids_after = _counter(PIDS_FILES, "max")
    oom = None not in (oom_before, oom_after) and oom_after > oom_before
    pids_hit = None not in (pids_before, pids_after) and pids_after > pids_before
    code = os.waitstatus_to_exitcode(status) if status is not None else None
    problems = []
    if left:
        problems.append("files left: " + ", ".join(left[:5]))
    if ipc:
        problems.append(f"{ipc} SysV IPC objects left")
    if oom:
        problems.append("memory limit reached")
    if pids_hit:
        problems.append("process limit reached")
    return {
        "returncode": code if code is None or code >= 0 else None,
        "signal": -code if code is not None and code < 0 else None,
        "oom": bool(oom),
        "killed": bool(killed),
        "problems": problems,
    }


class ServerExecution(Execution):
    """One execution of the fork server: its runner holds the host's pipes (socket mode) or the
    keeper's (relayed); its wait status comes on a status pipe, and a pidfd of its init becomes readable
    once every process of it is gone (the fork server kills the init when the runner ends)."""

    def __init__(self, server, pipes=None):
        self.begin()
        self.waiting, self.pid, self.status = None, None, None
        status_r, status_w = os.pipe()
        given = list(pipes) if pipes is not None else []
        self.to_child = self.from_child = None
        if pipes is None:  # attach: the keeper relays
            in_r, self.to_child = os.pipe()
            self.from_child, out_w = os.pipe()
            given = [in_r, out_w]
        try:
            self.pidfd = server.run(given[0], given[1], status_w)
        except BaseException:
            for fd in (status_r, self.to_child, self.from_child):
                if fd is not None:
                    os.close(fd)
            raise
        finally:
            os.close(status_w)
            if pipes is None:
                os.close(given[0])
                os.close(given[1])
        self.status_fd = self.watch_fd = status_r
        for fd in (self.to_child, self.from_child):
            if fd is not None:
                os.set_blocking(fd, False)
        self.pending = bytearray()
        self.out_open = self.from_child is not None

    def poll(self):
        if self.status is None and select.select([self.status_fd], [], [], 0)[0]:
            raw = os.read(self.status_fd, 4)
            # no report: the fork server killed the execution (or is gone): a kill
            self.status = struct.unpack("=i", raw)[0] if len(raw) == 4 else signal.SIGKILL
        return self.status is not None

    def kill(self):
        try:
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        except OSError:
            pass

    def close(self):
        for fd in (self.to_child, self.from_child, self.pidfd, self.status_fd):
            if fd is not None and fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.to_child = self.from_child = self.pidfd = self.status_fd = None

    def finish(self, killed, keep):
        """Every process of the execution gone (its init's pidfd readable; the fork server's next
        environment is not the execution's), then the container's own checks; report."""
        self.kill()
        gone = bool(select.select([self.pidfd], [], [], 5.0)[0])
        self.poll()
        if not killed:
            self.drain()
        self.close()
        report = _report(self.status, killed, self.oom_before, self.pids_before)
        if not gone:
            report["problems"].append("the execution's processes outlived it")
        return report


# -- the keeper -----------------------------------------------------------------------------------
class Keeper:
    def __init__(self, runner, server_args=None):
        self.runner = runner
        self.python = sys.executable
        self.buf = bytearray()
        self.passed = []  # socket mode: descriptors that came with b"S" frames, not yet handed over
        self.current = None
        self.spare = None  # exec mode: a runner started ahead, idle until the next execution claims it
        self.server = None  # the fork server (zygote.py), which builds each execution's namespaces and root
        self.server_problem = ""
        self.sched_before = {}
        if server_args:
            try:
                self.server = ForkServer(*server_args)
            except Exception as exc:  # noqa: BLE001 -- fork + exec still works (the host is told: hello)
                self.server_problem = str(exc)[:300]

    def keep(self):
        return {1} | ({self.server.pid} if self.server else set())

    def spawn(self, pipes=None):
        """An exec'd runner: relayed (pipes None on the attach channel) or with the host's pipes."""
        if CHANNEL is not None and pipes is None:
            raise OSError("an exec'd runner takes its pipes at its start")
        return spawn_exec(self.python, self.runner, pipes)

    def prespawn(self):
        """Exec mode: start the next runner while the container is idle: a fresh process, made after the
        previous execution was cleaned up, that has read nothing yet (it waits for its marker). (The
        fork server builds its next environment itself; socket mode hands an exec'd runner its pipes at
        its start.)"""
        if self.server is not None or CHANNEL is not None:
            return
        try:
            self.spare = Execution(self.spawn)
        except OSError:
            self.spare = None

    def claim(self, pipes=None):
        self.sched_before = _sched_state(self.keep())  # as the host left them (it may set CPU masks)
        if self.server is not None:
            return ServerExecution(self.server, pipes)
        spare, self.spare = self.spare, None
        if spare is not None and not spare.poll():
            spare.begin()
            _follow(spare.pid)
        else:
            if spare is not None:  # it died while idle: clean up silently and start afresh
                _kill_all(self.keep())
                spare.close()
            spare = Execution(lambda: self.spawn(pipes))
        if spare.waiting is not None:
            spare.start(pipes)
        return spare

    def end(self, cur, killed):
        self.current = None
        report = cur.finish(killed, self.keep())
        if self.server is not None and not self.server.healthy():
            report["problems"].append("fork server killed or stopped")
        after = _sched_state(self.keep())
        if any(after[pid] != self.sched_before.get(pid) for pid in after):
            report["problems"].append("the keeper's or fork server's priority, CPU mask or limits changed")
        send(b"X", json.dumps(report).encode())
        if not report["problems"]:
            self.prespawn()

    def receive(self):
        """Socket mode: what the host sent, with the descriptors that came along (to self.passed)."""
        data, ancdata, flags, _ = CHANNEL.recvmsg(CHUNK, socket.CMSG_SPACE(4 * 4))
        for level, kind, payload in ancdata:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                self.passed += [int.from_bytes(payload[i:i + 4], sys.byteorder)
                                for i in range(0, len(payload) - len(payload) % 4, 4)]
        if flags & socket.MSG_CTRUNC:  # more than the host ever sends: out of step, end here
            return b""
        return data

    def frames(self):
        while len(self.buf) >= 5:
            (size,) = struct.unpack(">I", self.buf[1:5])
            if len(self.buf) < 5 + size:
                return
            kind, payload = bytes(self.buf[:1]), bytes(self.buf[5 : 5 + size])
            del self.buf[: 5 + size]
            yield kind, payload

    def handle(self, kind, payload):
        cur = self.current
        if kind == b"S" and CHANNEL is not None:  # its two descriptors came with it
            pipes, self.passed = self.passed[:2], self.passed[2:]
            if cur is None and len(pipes) == 2:
                try:
                    self.current = self.claim(pipes)
                except OSError:  # no runner could be started: the host sees a crash
                    send(b"X", json.dumps({"returncode": None, "signal": 9, "oom": False, "killed": False,
                                           "problems": ["no runner could be started"]}).encode())
            for fd in pipes:  # the runner holds its own copies now
                os.close(fd)
        elif kind == b"S" and cur is None:
            self.current = self.claim()
        elif kind == b"I" and cur is not None:
            cur.pending += payload
            cur.pump_in()
        elif kind == b"K" and cur is not None:
            self.end(cur, killed=True)
        # anything else (a kill that crossed the end report, say) is stale and ignored

    def watch(self, cur):
        rlist, wlist, timeout = [IN_FD], [], None
        if cur is not None:
            if cur.out_open:
                rlist.append(cur.from_child)
            if cur.watch_fd is not None:
                rlist.append(cur.watch_fd)
            else:
                timeout = 0.005  # no pidfd: poll for the runner's exit
            if cur.pending:
                wlist.append(cur.to_child)
        return rlist, wlist, timeout

    def run(self):
        while True:
            cur = self.current
            rlist, wlist, timeout = self.watch(cur)
            try:
                readable, writable, _ = select.select(rlist, wlist, [], timeout)
            except InterruptedError:
                continue
            if cur is not None and cur.from_child in readable:
                cur.pump_out()
            if cur is not None and writable:
                cur.pump_in()
            if IN_FD in readable:
                try:
                    data = os.read(IN_FD, CHUNK) if CHANNEL is None else self.receive()
                except BlockingIOError:
                    continue
                if not data:  # the host is gone (its attach or FIFO end closed): end everything
                    break
                self.buf += data
                for kind, payload in self.frames():
                    self.handle(kind, payload)
            cur = self.current
            if cur is not None and cur.poll():
                self.end(cur, killed=False)
        _kill_all({1})


def open_socket(spec):
    """socket:<path> -> the host channel (close-on-exec, never inherited by a runner)."""
    global IN_FD, OUT_FD, CHANNEL
    CHANNEL = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    CHANNEL.connect(spec.partition(":")[2])
    CHANNEL.setblocking(False)
    IN_FD = OUT_FD = CHANNEL.fileno()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):  # the engine's stdin/stdout carry nothing
        os.dup2(null, fd)
    os.close(null)


def main():
    global RUNNER_SOURCE
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # as init: signals from inside are then ignored
    # argv: <runner> exec [socket:<path>], or <runner> fork <zygote source> <filter hex> <tmpfs bytes>
    # <modules to preload> <extension modules not to preload> [socket:<path>]
    RUNNER_SOURCE = runner = sys.argv[1]
    mode = sys.argv[2] if len(sys.argv) > 2 else "exec"
    rest = sys.argv[3:]
    server_args = None
    if mode == "fork":
        zygote, filter_hex, scratch, preload, skipped = rest[:5]
        rest = rest[5:]
        modules = [m for m in preload.split(",") if m] + dynload_modules(skipped.split(","))
        # socket mode: the host may have left the fork server's image beside the socket (pool.STDLIB_IMAGE)
        given = os.path.join(os.path.dirname(rest[0].partition(":")[2]), "stdlib.image") if (
            rest and rest[0].startswith("socket:")) else ""
        server_args = (zygote, filter_hex, scratch, ",".join(dict.fromkeys(modules)), given)
    dumpable = _prctl_dumpable(0)  # before the fork server forks: it inherits the flag
    keeper = Keeper(runner, server_args)
    if rest and rest[0].startswith("socket:"):
        open_socket(rest[0])  # after the fork server's fork: it never holds it
    keeper.prespawn()
    hello = {"dumpable": dumpable != 0, "pid": os.getpid(), "uid": os.getuid(),
             "fork_server": keeper.server.pid if keeper.server else None,
             "fork_server_problem": keeper.server_problem, "python": "%d.%d.%d" % sys.version_info[:3]}
    send(b"H", json.dumps(hello).encode())
    keeper.run()


if __name__ == "__main__":
    main()
