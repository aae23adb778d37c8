# acceptgate fork server ("zygote"): trusted code that runs inside one slot's bubblewrap sandbox,
# before any candidate. Standard library only; started as
#     python3 -I -S -B -c <this file> <control fd> <tmpfs bytes> <runner source> <filter hex> <preload>
#         <stdlib fd>
# (<preload>: the modules to import before any execution, comma-separated: backend.PRELOAD and the
# standard library's extension modules; <stdlib fd>: a descriptor holding the standard library's
# compiled modules, index_main's output, read once and closed before any execution), or, for one
# execution in a bubblewrap sandbox of its own (local-bwrap), with "once" in place of <control fd>: it
# then builds the execution's root in that sandbox's namespaces and becomes the runner on fds 0 and 1.
# "index <stdlib dir>" (run by the harness, outside any sandbox) writes that image to stdout.
#
# Nothing a candidate can name resolves on a filesystem another execution can name: R's root is a
# tmpfs made for this execution alone (its own superblock, so its own dentries and pages, dropped with
# its mount namespace), holding /proc (a new procfs of its pid namespace, pids only: subset=pid),
# /sandbox, /tmp and /dev/shm (tmpfs each) and the five device nodes, each a bind of a single file.
# The slot's view of the host (the interpreter's files) is unmounted from R's namespace before the
# runner starts: what the candidate imports comes from memory (MemoryFinder: the compiled standard
# library, read by Z before any execution; its extension modules imported by Z), and the only host
# files it can still reach are those mapped into its process (the interpreter, its libraries, the
# preloaded extension modules: /proc/self/exe, never a directory), whose pages the harness keeps
# locked in memory (residency.py).
#
# Per execution it builds a fresh environment, then starts the candidate runner in it:
#
#   zygote Z (slot userns S, CAP_SYS_ADMIN in S only, non-dumpable, child subreaper)
#     |- I: made by one clone(CLONE_VM | CLONE_FILES | new user, pid, mount, ipc, uts namespaces) that
#     |     runs libc's pause() on a small stack of its own: pid 1 of its pid namespace, no Python, no
#     |     copy of Z's memory (it shares Z's and touches none of it), every signal handler the default
#     |     (a namespace's init ignores those from inside: the runner cannot end it) and SIGCHLD
#     |     ignored (orphans that come to it are reaped by the kernel). Z maps uid/gid 65534 -> 65534.
#     `- R: forked by Z into I's pid namespace (setns of the pid namespace for children, then fork): pid 2
#           there, a child of Z. R joins I's user, mount, ipc and uts namespaces (setns: every
#           capability of I's user namespace, none of S's), mounts a new /proc (/proc/sys and co.
#           read-only), fresh tmpfs /sandbox, /tmp, /dev/shm, sets user.max_user_namespaces=0, drops
#           every capability, loads the seccomp filter (BPF built by the harness with libseccomp, see
#           seccomp.py), waits for the go, and becomes the runner (runner.py's _main), uid 65534, cwd
#           /sandbox.
#
# I and R are built ahead of time (the "spare", right after the previous execution has ended), so a
# run starts with one message. When R ends, Z reaps it, writes its wait status to the harness's status
# pipe and kills I: as pid 1 its end kills every process left in the namespace, and the namespaces
# (files, IPC objects, the pid counter) go with it. One copy of Z per execution (R), not two: I costs
# neither a copy of Z's memory nor its teardown nor the copy-on-write faults of a Python process.
# Keyrings are the host uid's, not a namespace's: the seccomp filter R loads denies the keyring calls.
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
import gc
import os
import re
import select
import signal
import _signal  # signal's own functions without the enum wrapping (fewer objects touched)
import socket
import _socket  # socket objects without socket.py's Python-level wrappers
import _frozen_importlib as _bootstrap  # ModuleSpec, without importing importlib's Python modules
import _frozen_importlib_external as _bootstrap_external
import marshal
import mmap
import zlib
import struct
import sys
import time

CLONE_VM = 0x00000100
CLONE_FILES = 0x00000400
CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
NAMESPACES = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS
# What the runner joins, in this order (the user namespace first: it holds the capabilities the others need)
JOINED = (("user", CLONE_NEWUSER), ("mnt", CLONE_NEWNS), ("ipc", CLONE_NEWIPC), ("uts", CLONE_NEWUTS))

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}.get(os.uname().machine, 155)

SIGCHLD = 17
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
CAPABILITY_VERSION_3 = 0x20080522
CAP_SYS_ADMIN = 21

UID = 65534
WORKDIR = "/sandbox"
# Where R mounts its execution's root before it moves into it (a directory of the slot's view)
NEW_ROOT = b"/sandbox"
DEV_NODES = (b"null", b"zero", b"full", b"random", b"urandom")
DEV_LINKS = ((b"/proc/self/fd", b"fd"), (b"/proc/self/fd/0", b"stdin"), (b"/proc/self/fd/1", b"stdout"),
             (b"/proc/self/fd/2", b"stderr"))
ROOT_BYTES = 1024 * 1024  # the execution's root: directories and mount points only (read-only once built)
# Directories of the standard library no candidate imports from (tests, GUI, tooling), and none that
# is not a package (site-packages is never in the view; lib-dynload's modules are imported by Z)
SKIPPED_DIRS = frozenset(("test", "tests", "idle_test", "idlelib", "tkinter", "turtledemo", "lib2to3", "ensurepip",
                          "venv", "site-packages", "dist-packages", "__pycache__", "lib-dynload"))
SPARE_TRIES = 3
INIT_STACK = 16 * 1024  # the init's own stack: pause() needs a few hundred bytes of it

libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
libc.clone.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
libc.setns.argtypes = [ctypes.c_int, ctypes.c_int]
PAUSE = ctypes.cast(libc.pause, ctypes.c_void_p)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def _fail(what):
    err = ctypes.get_errno()
    raise OSError(err, what + ": " + os.strerror(err))


def _check(rc, what):
    if rc != 0:
        _fail(what)


# The messages below are made only on failure: these run in every runner and every environment.
def prctl(option, arg=0):
    if libc.prctl(option, arg, 0, 0, 0) != 0:
        _fail("prctl %d" % option)


def setns(fd, kind, what):
    if libc.setns(fd, kind) != 0:
        _fail("setns " + what)


def capability_sets(keep=()):
    """What drop_capabilities needs: the bounding-set drops, capset's header and data (``keep`` in
    effective and permitted) and a buffer for capget. Made by the fork server once, before any runner:
    a runner then allocates nothing for them (each new object is a page it copies)."""
    header, data = _CapHeader(CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    for cap in keep:
        data[cap // 32].effective |= 1 << (cap % 32)
        data[cap // 32].permitted |= 1 << (cap % 32)
    want = [(data[i].effective, data[i].permitted, 0) for i in range(2)]
    drops = tuple(cap for cap in range(LAST_CAP + 1) if cap not in keep)
    return drops, ctypes.byref(header), data, (_CapData * 2)(), want


def drop_capabilities(sets):
    """No capability left in any set but the ``keep`` of ``sets`` (capability_sets): effective and
    permitted only; none to gain by exec."""
    drops, header, data, now, want = sets
    raw = libc.prctl
    for cap in drops:
        raw(PR_CAPBSET_DROP, cap, 0, 0, 0)  # EPERM without CAP_SETPCAP (the fork server itself)
    raw(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    _check(libc.capset(header, data), "capset")
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    # Read back from the kernel (capget: one call, where /proc/self/status is rendered and parsed). The
    # ambient set is always within permitted and inheritable: none is left when inheritable is empty.
    _check(libc.capget(header, now), "capget")
    held = [(word.effective, word.permitted, word.inheritable) for word in now]
    if held != want:
        raise OSError("capabilities still held: %r" % (held,))


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def filter_program(program):
    """The filter as prctl takes it (a reference to a sock_fprog), made once by the fork server; the
    program's bytes and the struct stay referenced by the returned tuple."""
    code = ctypes.create_string_buffer(program, len(program))
    prog = _Program(len(program) // 8, ctypes.cast(code, ctypes.c_void_p))
    return ctypes.byref(prog), prog, code


def load_filter(program):
    """The syscall filter (filter_program's) on this process and all it forks (no_new_privs is set)."""
    _check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, program[0], 0, 0), "seccomp")


def write_file(path, data):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def send(sock, data, fds=()):
    if not fds:  # send(), not sendmsg: the runner sends "ready" under the filter (SENDMSG denied)
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


def close_all(fds):
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


# --- the runner (R): joins the execution's namespaces, builds its view, waits for the go -----------

def build_environment(once=False):
    """In R, with every capability of the execution's user namespace: the execution's own root. (once:
    in a bubblewrap sandbox of its own, with CAP_SYS_ADMIN and CAP_SYS_RESOURCE in its user namespace.)"""
    mount, check = libc.mount, _check
    check(mount(*MOUNTS[0][0]), MOUNTS[0][1])  # the tree private: nothing here propagates anywhere
    if once:  # a /proc of our own over bubblewrap's, whose /proc/sys is read-only
        check(mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None), "mount '/proc'")
    # No user namespaces below this one: the candidate gets no capabilities anywhere.
    write_file(b"/proc/sys/user/max_user_namespaces", b"0")
    for args, what in MOUNTS[1:]:
        check(mount(*args), what)
        if args[1] == NEW_ROOT:  # the root's skeleton: mount points for what follows
            make_skeleton()
    enter_root()
    drop_capabilities(NO_CAPABILITIES)


def make_skeleton():
    """The directories, device-node mount points and links of the execution's root (a fresh tmpfs)."""
    for name, mode in ((b"proc", 0o555), (b"dev", 0o755), (b"tmp", 0o1777), (b"sandbox", 0o700)):
        os.mkdir(NEW_ROOT + b"/" + name, mode)
    os.mkdir(NEW_ROOT + b"/dev/shm", 0o1777)
    for node in DEV_NODES:
        os.close(os.open(NEW_ROOT + b"/dev/" + node, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    for target, link in DEV_LINKS:
        os.symlink(target, NEW_ROOT + b"/dev/" + link)


def enter_root():
    """R moves into its execution's root and drops the slot's view: no host directory is left in its
    mount namespace (pivot_root, then the old root detached), so no name it looks up is looked up there."""
    os.chdir(NEW_ROOT)
    check = _check
    check(libc.syscall(SYS_PIVOT_ROOT, b".", b"."), "pivot_root")
    check(libc.umount2(b".", MNT_DETACH), "umount the old root")
    os.chdir(b"/")
    check(libc.mount(None, b"/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, None),
          "mount '/' read-only")


def mount_plan(scratch_bytes):
    """libc.mount's arguments (and what an error names) for an execution's root, in order: the tree
    private, the root's tmpfs (make_skeleton fills it), then inside it a new procfs (its pid namespace's
    processes only: no global file, no /proc/sys), the fresh tmpfs places and the device nodes, each a
    bind of one file. Made once: a runner builds no argument (each new object is a page it copies)."""
    plan = [(None, b"/", None, MS_REC | MS_PRIVATE, None),
            (b"tmpfs", NEW_ROOT, b"tmpfs", MS_NOSUID | MS_NODEV, b"size=%d,mode=0755" % ROOT_BYTES),
            (b"proc", NEW_ROOT + b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, b"subset=pid")]
    for path, mode in ((b"/sandbox", "0700"), (b"/tmp", "1777"), (b"/dev/shm", "1777")):
        plan.append((b"tmpfs", NEW_ROOT + path, b"tmpfs", MS_NOSUID | MS_NODEV,
                     ("size=%d,mode=%s" % (scratch_bytes, mode)).encode()))
    for node in DEV_NODES:
        plan.append((b"/dev/" + node, NEW_ROOT + b"/dev/" + node, None, MS_BIND, None))
    return tuple((args, "mount %r" % (args[1],)) for args in plan)


# --- the standard library, from memory -------------------------------------------------------------

class MemoryFinder:
    """The standard library's pure-Python modules, served from memory: INDEX (name -> (is package, path,
    offset, length)) of IMAGE, the harness's sealed image mapped privately by Z before any execution
    (its pages shared read-only by every execution; none can write them): importing one opens no file.
    Its extension modules are imported by Z itself (PRELOAD)."""

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        entry = INDEX.get(name)
        if entry is None:
            return None
        spec = _bootstrap.ModuleSpec(name, cls, origin=entry[1], is_package=entry[0])
        if entry[0]:
            spec.submodule_search_locations = [entry[1].rpartition("/")[0]]
        spec.has_location = True
        return spec

    @staticmethod
    def create_module(spec):
        return None

    @classmethod
    def exec_module(cls, module):
        exec(cls.get_code(module.__spec__.name), module.__dict__)

    @staticmethod
    def get_code(name):
        _, _, offset, length = INDEX[name]
        return marshal.loads(zlib.decompress(IMAGE[offset:offset + length]))

    @staticmethod
    def get_source(name):
        return None

    @staticmethod
    def is_package(name):
        return INDEX[name][0]


def read_index(fd):
    """The standard library's image (index_main's output) mapped from the harness's sealed descriptor
    (then closed): (its index, the mapping). Only the index is read now; each module when imported."""
    global IMAGE
    image = mmap.mmap(fd, 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ)
    os.close(fd)
    size = int.from_bytes(image[:8], "little")
    index = marshal.loads(image[8:8 + size])
    if type(index) is not dict:
        raise SystemExit("the standard library's image has no index")
    base = 8 + size
    IMAGE = image
    return {name: (is_pkg, path, base + offset, length) for name, (is_pkg, path, offset, length) in index.items()}


def compiled(path):
    """The module's code: from its cached bytecode when that matches the source, else compiled."""
    import importlib.util

    st = os.stat(path)
    try:
        with open(importlib.util.cache_from_source(path), "rb") as f:
            data = f.read()
        if (data[:4] == importlib.util.MAGIC_NUMBER and data[4:8] == b"\0\0\0\0"
                and int.from_bytes(data[8:12], "little") == int(st.st_mtime) & 0xFFFFFFFF
                and int.from_bytes(data[12:16], "little") == st.st_size & 0xFFFFFFFF):
            return marshal.loads(data[16:])
    except (OSError, ValueError, EOFError):
        pass
    with open(path, "rb") as f:
        return compile(f.read(), path, "exec", dont_inherit=True)


def index_main(stdlib):
    """The standard library's image on stdout: the index's length (8 bytes), the index (marshal of
    {module name: (is package, path, offset, length)}), then each module's code, marshalled and
    compressed (a third of the size: every byte of it is in each runner's address space)."""
    index, blobs, offset = {}, [], 0
    for top, dirs, files in os.walk(stdlib):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and d.isidentifier())
        rel = os.path.relpath(top, stdlib)
        package = "" if rel == "." else rel.replace(os.sep, ".")
        if package and "__init__.py" not in files:
            dirs[:] = []  # not a package: nothing under it is importable as one
            continue
        for name in sorted(files):
            stem = name[:-3]
            if not name.endswith(".py") or not stem.isidentifier():
                continue
            path = os.path.join(top, name)
            full = package if stem == "__init__" else (package + "." + stem if package else stem)
            try:
                blob = zlib.compress(marshal.dumps(compiled(path)), 6)
            except (SyntaxError, ValueError, OSError):
                continue  # e.g. a Python 2 file left in a data directory
            index[full] = (stem == "__init__", path, offset, len(blob))
            blobs.append(blob)
            offset += len(blob)
    head = marshal.dumps(index)
    out = len(head).to_bytes(8, "little") + head + b"".join(blobs)
    view = memoryview(out)
    while view:
        view = view[os.write(1, view):]


def runner_main(namespaces, go):
    """R, forked into the execution's pid namespace. Never returns."""
    code = 1
    try:
        os.setsid()  # a process group of its own: kill(0) must not reach the fork server's
        low = 3  # the control socket, pidfds, the zygote's own: none of them is R's
        for fd in sorted(set(namespaces.values()) | {go.fileno()}):
            os.closerange(low, fd)
            low = fd + 1
        os.closerange(low, MAX_FD)
        for name, kind in JOINED:  # the user namespace first: from then on no capability in S
            setns(namespaces[name], kind, name)
        close_all(namespaces.values())
        build_environment()
        load_filter(FILTER_PROGRAM)  # after the mounts that need them: mount and setns are denied from here on
        send(go, b"ready")
        data, fds = recv(go, 2)
        go.close()
        if data != b"go" or len(fds) != 2:
            close_all(fds)
            os._exit(2)
        become_runner(fds[0], fds[1])
    except BaseException:
        code = 3
    os._exit(code)


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
        _signal.signal(_signal.SIGINT, _signal.default_int_handler)  # as in any Python process (Z has none)
        prctl(PR_SET_DUMPABLE, 1)  # like any fresh process (Z and the init stay non-dumpable)
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


# --- building the spare: I and R -------------------------------------------------------------------

class Spare:
    """An execution's init (I) and its runner (R, waiting for the go), both children of Z."""

    def __init__(self, init, runner, go):
        self.init, self.runner, self.go = init, runner, go

    def discard(self):
        self.init.kill()
        self.go.close()
        LEFT.extend((self.init, self.runner))


class Child:
    """A child of Z: its pid, a pidfd (to watch it end and to kill it) and, for an init, its stack."""

    def __init__(self, pid, stack=None):
        self.pid, self.stack = pid, stack
        self.pidfd = os.pidfd_open(pid)

    def kill(self):
        try:
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        except OSError:
            pass

    def reaped(self, block=False):
        """True once it has ended and is reaped (its pidfd closed); its wait status in self.status."""
        try:
            pid, status = os.waitpid(self.pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            pid, status = self.pid, -1
        if pid == 0:
            return False
        self.status = status
        close_all([self.pidfd])
        if self.stack is not None and len(STACKS) < 4:  # its init is gone: the next one may use it
            STACKS.append(self.stack)
        self.pidfd, self.stack = -1, None
        return True


LEFT = []  # children that ended or were killed, to reap (inits of ended executions, discarded spares)


def reap():
    LEFT[:] = [child for child in LEFT if not child.reaped()]


def make_init():
    """I: pid 1 of fresh namespaces, sharing our memory (CLONE_VM: nothing is copied, and pause() on its
    own stack touches none of it) and our descriptor table (CLONE_FILES: it holds no copies). Its signal
    handlers are ours at the clone: none but SIGCHLD ignored (set for the clone only: orphans that come
    to it are reaped by the kernel). Returns (the init, {namespace: descriptor})."""
    stack = STACKS.pop() if STACKS else ctypes.create_string_buffer(INIT_STACK)
    top = (ctypes.addressof(stack) + INIT_STACK - 64) & ~15
    # Dumpable meanwhile (the flag is our memory's, so the init's too): its /proc files are then ours to
    # write (the id maps) and open (its namespaces); no candidate exists yet.
    prctl(PR_SET_DUMPABLE, 1)
    init = None
    try:
        _signal.signal(SIGCHLD, _signal.SIG_IGN)
        try:
            pid = libc.clone(PAUSE, top, CLONE_VM | CLONE_FILES | NAMESPACES | SIGCHLD, None)
        finally:
            _signal.signal(SIGCHLD, _signal.SIG_DFL)
        if pid < 0:
            raise OSError(ctypes.get_errno(), "clone")
        init = Child(pid, stack)
        write_file("/proc/%d/setgroups" % pid, b"deny")
        write_file("/proc/%d/uid_map" % pid, ID_MAP)
        write_file("/proc/%d/gid_map" % pid, ID_MAP)
        namespaces = {}
        try:
            for name in ("pid",) + tuple(name for name, _ in JOINED):
                namespaces[name] = os.open("/proc/%d/ns/%s" % (pid, name), os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            close_all(namespaces.values())
            raise
        return init, namespaces
    except BaseException:
        if init is not None:
            init.kill()
            LEFT.append(init)
        raise
    finally:
        prctl(PR_SET_DUMPABLE, 0)


def fork_runner(namespaces, z_end, r_end):
    """R, forked into the init's pid namespace (ours for children meanwhile). Returns its pid."""
    setns(namespaces["pid"], CLONE_NEWPID, "pid")
    try:
        pid = os.fork()
    except BaseException:
        setns(OWN_PID_NS, CLONE_NEWPID, "own pid")
        raise
    if pid == 0:
        z_end.close()
        runner_main(namespaces, r_end)
    setns(OWN_PID_NS, CLONE_NEWPID, "own pid")  # the next init's pid namespace is a child of ours
    return pid


class NotEmpty(Exception):
    """Something is left in the slot's network namespace: no environment is built in it again."""


def network_state():
    """What an execution could leave in the slot's network namespace, counted by the kernel for this
    namespace: sockets in use (every family), and per protocol those in use and in TIME_WAIT."""
    state = []
    for fd in SOCKSTAT_FDS:  # opened once (main); a read at offset 0 renders the file anew
        # "sockets: used 1", "TCP: inuse 0 orphan 0 tw 0 alloc 0 mem 0", ...
        for line in os.pread(fd, 4096, 0).decode().splitlines():
            words = line.split()
            # (orphan, alloc and mem are the machine's, not the namespace's: they move with the host)
            state += [(words[0], words[i], words[i + 1]) for i in range(1, len(words) - 1, 2)
                      if words[i] in ("used", "inuse", "tw")]
    return state


def network_used():
    """Whether any count network_state reads is not 0: one search of the raw text per file, no parse."""
    for fd in SOCKSTAT_FDS:
        if NONZERO.search(os.pread(fd, 4096, 0)):
            return True
    return False


def check_network():
    """Raise NotEmpty unless the namespace holds no socket. The previous execution's processes are all
    gone (its init has exited), and with them its sockets; but a socket's memory may be freed after a
    grace period of the kernel's (a discarded spare still dying, bubblewrap's netlink socket that set
    up the loopback), hence a wait of up to NETWORK_SETTLE seconds before concluding."""
    if not network_used():
        return
    deadline = time.monotonic() + NETWORK_SETTLE
    while True:
        now = network_state()
        if not any(count != "0" for _, _, count in now):
            return
        if time.monotonic() >= deadline:
            raise NotEmpty("the slot's network namespace holds sockets no execution may leave: %r" % (now,))
        reap()
        select.select([], [], [], 0.01)


def build_spare():
    check_network()
    z_end, r_end = _socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        init, namespaces = make_init()
    except OSError:  # e.g. the process cap
        z_end.close(), r_end.close()
        return None
    try:
        runner = Child(fork_runner(namespaces, z_end, r_end))
    except OSError:  # e.g. the process cap, during a fork bomb in the running execution
        init.kill()
        LEFT.append(init)
        z_end.close()
        return None
    finally:
        close_all(namespaces.values())
        r_end.close()
    spare = Spare(init, runner, z_end)
    try:
        ready, _ = recv(z_end, 0)
    except OSError:
        ready = b""
    if ready != b"ready":
        spare.discard()
        return None
    return spare


def serve(ctl):
    try:
        spare = build_spare()
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


def runner_ended(run):
    """R has ended: its wait status to the harness, then the init killed (with whatever R left) and
    reaped: its end as pid 1 waits until every process of its namespace is gone."""
    run.runner.reaped(block=True)
    try:
        os.write(run.status, struct.pack("=i", run.runner.status))
    except OSError:
        pass
    close_all([run.status])
    run.init.kill()
    run.init.reaped(block=True)


class Run:
    def __init__(self, init, runner, status):
        self.init, self.runner, self.status = init, runner, status


def serve_runs(ctl, spare):
    running = []  # executions whose runner is alive
    while True:
        watched = [ctl] + [run.runner.pidfd for run in running]
        ready, _, _ = select.select(watched, [], [])
        for run in [run for run in running if run.runner.pidfd in ready]:
            running.remove(run)
            runner_ended(run)
        reap()
        # The next environment is built once the execution is over, never beside it: while one runs,
        # the slot's cgroup holds only it and the fixed residents (an exact process cap).
        if spare is None and not running:
            spare = build_spare()
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
                spare = build_spare()
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
            # (affinity.py); the runner was forked before that: it follows now.
            os.sched_setaffinity(spare.runner.pid, os.sched_getaffinity(0))
        except OSError:
            pass
        stdin_fd, stdout_fd, status_fd = fds
        try:
            send(spare.go, b"go", [stdin_fd, stdout_fd])
        except OSError:
            spare.discard()
            spare = None
            close_all(fds)
            send(ctl, b"error the execution environment died")
            continue
        close_all([stdin_fd, stdout_fd])
        spare.go.close()
        send(ctl, b"started", [spare.init.pidfd])
        running.append(Run(spare.init, spare.runner, status_fd))
        spare = None


def main():
    global RUNNER, MAX_FD, MOUNTS, LAST_CAP, FILTER_PROGRAM, NO_CAPABILITIES, OWN_PID_NS, SOCKSTAT_FDS, PRELOAD, INDEX
    if sys.argv[1] == "index":
        index_main(sys.argv[2])
        return
    once = sys.argv[1] == "once"
    ctl_fd, scratch_bytes, runner_source = (-1 if once else int(sys.argv[1])), int(sys.argv[2]), sys.argv[3]
    # Imported once here, before any candidate, so that no execution pays for them; each execution gets
    # a copy-on-write copy (the list and why: backend.PRELOAD).
    PRELOAD = tuple(name for name in sys.argv[5].split(",") if name)
    filter_bytes = bytes.fromhex(sys.argv[4])
    if not filter_bytes:
        raise SystemExit("no syscall filter given")
    FILTER_PROGRAM = filter_program(filter_bytes)
    INDEX = read_index(int(sys.argv[6]))
    sys.meta_path.insert(sys.meta_path.index(_bootstrap_external.PathFinder), MemoryFinder)
    if once:
        once_main(scratch_bytes, runner_source)
        return
    # A /proc of our own on top of bubblewrap's (whose read-only covers would make the kernel refuse
    # each execution's new /proc).
    _check(libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None), "mount '/proc'")
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            LAST_CAP = int(f.read())
    except (OSError, ValueError):
        LAST_CAP = 63
    MOUNTS = mount_plan(scratch_bytes)
    NO_CAPABILITIES = capability_sets()
    # CAP_SYS_ADMIN in the slot's user namespace is the one capability kept: the kernel asks for it to
    # set the pid namespace of our next child (an execution's). A runner leaves this namespace (it
    # joins its execution's user namespace) before it loads anything.
    drop_capabilities(capability_sets(keep=(CAP_SYS_ADMIN,)))
    prctl(PR_SET_DUMPABLE, 0)
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    # No handler of ours for an init to inherit (it ignores every default-handled signal from inside)
    _signal.signal(_signal.SIGINT, _signal.SIG_DFL)
    os.chdir("/")
    OWN_PID_NS = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    SOCKSTAT_FDS = tuple(os.open("/proc/net/" + name, os.O_RDONLY | os.O_CLOEXEC)
                         for name in ("sockstat", "sockstat6") if os.path.exists("/proc/net/" + name))
    MAX_FD = os.sysconf("SC_OPEN_MAX")
    preload(runner_source)
    # What exists now (the interpreter, the preloaded modules, the runner) goes to the collector's
    # permanent generation: a runner's full collections would walk it all and copy every page it sits
    # on (the fork shares them), and ours would dirty them again for the next runner.
    gc.collect()
    gc.freeze()
    # The compilers' arenas (this source's, the runner's) are freed but their pages still resident:
    # handed back, they are not in every fork's page tables and every runner's teardown (~0.5 MB).
    libc.malloc_trim(0)
    ctl = _socket.socket(fileno=ctl_fd)
    try:
        serve(ctl)
    except ConnectionError:
        pass


def preload(runner_source):
    """The modules every execution may use, imported before any exists, and the runner's code."""
    global RUNNER
    for name in PRELOAD:
        try:
            __import__(name)
        except ImportError:
            pass
    RUNNER = {"__name__": "acceptgate_runner", "__builtins__": __builtins__}
    exec(compile(runner_source, "runner.py", "exec"), RUNNER)


def once_main(scratch_bytes, runner_source):
    """One execution in this bubblewrap sandbox (local-bwrap): its root built here, in the sandbox's own
    namespaces, then the runner on fds 0 and 1."""
    global MOUNTS, NO_CAPABILITIES, LAST_CAP, MAX_FD
    MOUNTS = mount_plan(scratch_bytes)
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            LAST_CAP = int(f.read())
    except (OSError, ValueError):
        LAST_CAP = 63
    NO_CAPABILITIES = capability_sets()
    MAX_FD = os.sysconf("SC_OPEN_MAX")
    preload(runner_source)
    stdin_fd, stdout_fd = os.dup(0), os.dup(1)
    build_environment(once=True)
    load_filter(FILTER_PROGRAM)
    become_runner(stdin_fd, stdout_fd)


PRELOAD = ()  # main() sets it
INDEX = {}  # the standard library's modules (MemoryFinder); main() reads them
IMAGE = b""  # their code (read_index's mapping)
MOUNTS = ()  # libc.mount's arguments for each execution's view (mount_plan); main() sets them
ID_MAP = b"%d %d 1" % (UID, UID)
SOCKSTAT_FDS = ()  # /proc/net/sockstat and sockstat6 (no IPv6 in this kernel: the one)
RUNNER = {}
FILTER_PROGRAM = None  # filter_program(); main() sets it
NO_CAPABILITIES = None  # capability_sets() for the runner; main() sets it
STACKS = []  # init stacks whose init is gone (reaped), for the next ones
MAX_FD = 1024
LAST_CAP = 63
OWN_PID_NS = -1
NETWORK_SETTLE = 2.0
# A count network_state reads ("used", "inuse", "tw": a whole word, then its number) that is not 0
NONZERO = re.compile(rb"(?<!\S)(?:used|inuse|tw) 0*[1-9]")

if __name__ == "__main__":
    main()
