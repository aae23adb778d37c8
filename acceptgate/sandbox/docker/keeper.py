# acceptgate container keeper: PID 1 of a warm sandbox container (standard library only).
#
# It starts one fresh runner process per execution, relays bytes between the host and that runner,
# and afterwards removes everything the execution left: every other process, every file in the
# writable tmpfs mounts; it checks that no SysV IPC object survives. It then reports the runner's
# exit status and anything it had to clean (the host replaces a container with any such problem).
#
# Runners come from a fork server (the "zygote"): a copy of this interpreter forked at container start,
# before any execution data exists, that never receives any (only one-byte spawn requests). Each
# runner is a fresh process forked from it -- a pre-initialised interpreter identical every time --
# that then runs the runner source (`python3 -I -S -B -c <runner>` without the interpreter start).
# If the zygote is gone, runners are started with fork + exec of that very command instead.
#
# Why the candidate (same uid) cannot tamper with the keeper or the zygote: a pid namespace's init
# ignores signals from inside the namespace that it has no handler for (SIGKILL and SIGSTOP included);
# both are non-dumpable, so they cannot be ptraced and their /proc/<pid>/{mem,fd,environ} cannot be
# opened. The zygote can be killed or stopped: the keeper notices and the container is replaced. The
# runner talks to pipes; it never holds the container's stdin/stdout, so it cannot forge keeper frames.
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
import gc
import json
import os
import resource
import select
import signal
import _signal  # signal's own functions, without the enum round trip (see _become_runner)
import socket
import struct
import sys
import time

WRITABLE = ("/sandbox", "/tmp", "/dev/mqueue", "/dev/shm")
OOM_FILES = ("/sys/fs/cgroup/memory/memory.oom_control", "/sys/fs/cgroup/memory.events")
PIDS_FILES = ("/sys/fs/cgroup/pids/pids.events", "/sys/fs/cgroup/pids.events")
CHUNK = 1 << 16
RUNNER_FLAGS = ["-I", "-S", "-B", "-c"]
SPAWN_TIMEOUT = 5.0
IN_FD, OUT_FD = 0, 1  # the host's channel (the socket's descriptor, twice, in socket mode)
CHANNEL = None  # socket mode: the connected socket (the runner's pipes come through it)


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
            os.execve(python, [python, *RUNNER_FLAGS, runner], {})
        finally:
            os._exit(127)
    if pipes is None:  # the host's are closed by the caller
        os.close(in_r)
        os.close(out_w)
    return pid, to_child, from_child, None


class Zygote:
    """The fork server: forked once, before any execution, from a keeper that held no data yet."""

    def __init__(self, runner, preload=()):
        code = compile(runner, "<runner>", "exec")
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.pid = os.fork()
        if self.pid == 0:
            try:
                self.sock.close()
                _zygote_loop(theirs, code, preload)
            finally:
                os._exit(0)
        theirs.close()
        self.sock.settimeout(SPAWN_TIMEOUT)

    def _request(self, kind, count):
        """A new runner as a grandchild that the keeper (init) inherits: its pid and ``count`` descriptors."""
        self.sock.send(kind)
        msg, fds, _, _ = socket.recv_fds(self.sock, 32, count)
        if len(fds) != count or not msg.isdigit():
            for fd in fds:
                os.close(fd)
            raise OSError("zygote sent no runner")
        return int(msg), fds

    def spawn(self):
        """A runner on pipes of the keeper's: (pid, to_child, from_child, None)."""
        pid, (to_child, from_child) = self._request(b"f", 2)
        return pid, to_child, from_child, None

    def spawn_waiting(self):
        """A runner that waits for its two pipes (Execution.start): (pid, None, None, its socket)."""
        pid, (go,) = self._request(b"w", 1)
        return pid, None, None, socket.socket(fileno=go)

    def healthy(self):
        """Alive and not stopped (a candidate may have sent it SIGSTOP: continue it first)."""
        try:
            os.kill(self.pid, signal.SIGCONT)
            pid, _ = os.waitpid(self.pid, os.WNOHANG)
        except (ProcessLookupError, ChildProcessError):
            return False
        return pid == 0


def _zygote_loop(sock, code, preload):
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # the container's stdin/stdout are the keeper's alone
        os.dup2(null, fd)
    os.close(null)
    # Imported once here, so that no runner pays for them (the host's list: backend.PRELOAD, as the
    # local fork server's)
    for name in preload:
        try:
            __import__(name)
        except ImportError:
            pass
    # The runner's environment is empty, as an exec'd one's (spawn_exec): cleared here once, and every
    # runner forked from here inherits it (os.environ.clear() is a Python loop over every variable).
    os.environ.clear()
    # What exists now goes to the collector's permanent generation: a runner's full collections would
    # walk it all and copy every page it sits on (as in the local fork server, zygote.py).
    gc.collect()
    gc.freeze()
    while True:
        try:
            request = sock.recv(16)
        except OSError:
            return
        if not request:
            return
        if request == b"w":  # the runner waits on a socket for the host's pipes (socket mode)
            ours, go = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            kept, given = [ours.detach()], [go.detach()]
        else:
            in_r, to_child = os.pipe()
            from_child, out_w = os.pipe()
            kept, given = [to_child, from_child], [in_r, out_w]
        pid_r, pid_w = os.pipe()
        middle = os.fork()
        if middle == 0:  # double fork: the runner's parent exits, so init (the keeper) adopts it
            try:
                sock.close()
                for fd in kept + [pid_r]:
                    os.close(fd)
                pid = os.fork()
                if pid == 0:
                    os.close(pid_w)
                    if len(given) == 1:
                        given = _await_pipes(given[0])
                    _become_runner(given[0], given[1], code)
                os.write(pid_w, str(pid).encode())
            finally:
                os._exit(0)
        for fd in given + [pid_w]:
            os.close(fd)
        pid = os.read(pid_r, 32)
        os.close(pid_r)
        os.waitpid(middle, 0)  # gone before the keeper hears of the runner: no stray process
        try:
            socket.send_fds(sock, [pid or b"-"], kept)
        finally:
            for fd in kept:
                os.close(fd)


def _await_pipes(go):
    """A waiting runner: its two pipes from the keeper (the host's), or its end (os._exit)."""
    try:
        sock = socket.socket(fileno=go)
        _, fds, _, _ = socket.recv_fds(sock, 16, 2)
        sock.close()
    except OSError:
        fds = []
    if len(fds) != 2:
        os._exit(2)
    return fds


def _become_runner(in_r, out_w, code):
    status = 1
    try:
        _runner_fds(in_r, out_w)
        _prctl_dumpable(1)  # like an exec'd runner: its own /proc/self is its own again
        _oom_first()
        _signal.signal(_signal.SIGINT, _signal.default_int_handler)
        sys.argv[:] = ["-c"]
        exec(code, {"__name__": "__main__", "__builtins__": __builtins__})
        status = 0
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        status = 1
    finally:
        os._exit(status)


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
        left = []
        for top in WRITABLE:
            left += [top + "/" + n for n in _empty_dir(top)]
        ipc = _ipc_objects()
        oom_after = _counter(OOM_FILES, "oom_kill")
        pids_after = _counter(PIDS_FILES, "max")
        oom = None not in (self.oom_before, oom_after) and oom_after > self.oom_before
        pids_hit = None not in (self.pids_before, pids_after) and pids_after > self.pids_before
        code = os.waitstatus_to_exitcode(self.status) if self.status is not None else None
        problems = []
        if left:
            problems.append("files left: " + ", ".join(left[:5]))
        if ipc:
            problems.append(f"{ipc} SysV IPC objects left")
        if leftovers:
            problems.append(f"{leftovers} other processes were running")
        if oom:
            problems.append("memory limit reached")
        if pids_hit:
            problems.append("process limit reached")
        survivors = _other_pids(keep)
        if survivors:
            problems.append(f"{len(survivors)} processes survived SIGKILL")
        report = {
            "returncode": code if code is None or code >= 0 else None,
            "signal": -code if code is not None and code < 0 else None,
            "oom": bool(oom),
            "killed": bool(killed),
            "problems": problems,
        }
        return report


# -- the keeper -----------------------------------------------------------------------------------
class Keeper:
    def __init__(self, runner, fork_server, preload=()):
        self.runner = runner
        self.python = sys.executable
        self.buf = bytearray()
        self.passed = []  # socket mode: descriptors that came with b"S" frames, not yet handed over
        self.current = None
        self.spare = None  # a runner started ahead, idle until the next execution claims it
        self.zygote = None
        self.sched_before = {}
        if fork_server:
            try:
                self.zygote = Zygote(runner, preload)
            except Exception:  # noqa: BLE001 -- fork + exec still works
                self.zygote = None

    def keep(self):
        return {1} | ({self.zygote.pid} if self.zygote else set())

    def spawn(self, pipes=None):
        """A runner: relayed (pipes None on the attach channel), waiting for the host's pipes (socket
        mode, ahead of its execution), or with them (socket mode without a fork server)."""
        if self.zygote is not None:
            try:
                return self.zygote.spawn_waiting() if CHANNEL is not None else self.zygote.spawn()
            except OSError:
                self.zygote = None  # gone: from now on fork + exec (a fresh image needs no zygote)
        if CHANNEL is not None and pipes is None:
            raise OSError("an exec'd runner takes its pipes at its start")
        return spawn_exec(self.python, self.runner, pipes)

    def prespawn(self):
        """Start the next runner while the container is idle: a fresh process, made after the
        previous execution was cleaned up, that has read nothing yet (it waits for its marker, or
        in socket mode for its pipes)."""
        try:
            self.spare = Execution(self.spawn)
        except OSError:
            self.spare = None

    def claim(self, pipes=None):
        self.sched_before = _sched_state(self.keep())  # as the host left them (it may set CPU masks)
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
        if self.zygote is not None and not self.zygote.healthy():
            report["problems"].append("fork server killed or stopped")
            self.zygote = None
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
            if cur.pidfd is not None:
                rlist.append(cur.pidfd)
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
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # as init: signals from inside are then ignored
    runner = sys.argv[1]
    mode = sys.argv[2] if len(sys.argv) > 2 else "fork"  # "exec", or "fork:<modules to preload>"
    fork_server = mode != "exec"
    preload = tuple(name for name in mode.partition(":")[2].split(",") if name)
    dumpable = _prctl_dumpable(0)  # before the zygote forks: it inherits the flag
    keeper = Keeper(runner, fork_server, preload)
    if len(sys.argv) > 3 and sys.argv[3].startswith("socket:"):
        open_socket(sys.argv[3])  # after the zygote's fork: it never holds it
    keeper.prespawn()
    hello = {"dumpable": dumpable != 0, "pid": os.getpid(), "uid": os.getuid(),
             "fork_server": keeper.zygote.pid if keeper.zygote else None, "python": "%d.%d.%d" % sys.version_info[:3]}
    send(b"H", json.dumps(hello).encode())
    keeper.run()


if __name__ == "__main__":
    main()
