"""The bubblewrap command line the local backend runs the runner under.

What the sandbox binds: the interpreter's binary, stdlib and shared-library dirs (read-only, nothing
else of the host), a private /proc of its own pid namespace, a minimal /dev, and three small private
tmpfs mounts. What the candidate sees is less: the fork server (``zygote.py``, in a slot or one-shot)
moves each execution into a root of its own before the candidate exists -- a fresh tmpfs with /proc
(pids only), the five device nodes and its working dir, /tmp and /dev/shm, the only writable places --
and unmounts the view. All three are size-capped, charged to the execution's memory cgroup and gone
with the mount namespace, so a candidate can neither fill the host's disk nor leave a file behind for
the next execution.

Namespaces: user (uid/gid 65534 inside; no nested user namespaces), pid, net (loopback only, nothing
listens), ipc, uts, cgroup, mount. All capabilities dropped, no environment, a new session (no
TIOCSTI on a terminal), and the sandbox dies with the harness.
"""

from __future__ import annotations

from acceptgate.sandbox.backend import SANDBOX_ENV
from acceptgate.sandbox.hostlayers import SANDBOX_UID, Bwrap

WORKDIR = "/sandbox"
SCRATCH_BYTES = 32 * 1024 * 1024  # per tmpfs (working dir, /tmp, /dev/shm)

DEV_NODES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
DEV_LINKS = (("/dev/fd", "/proc/self/fd"), ("/dev/stdin", "/proc/self/fd/0"),
             ("/dev/stdout", "/proc/self/fd/1"), ("/dev/stderr", "/proc/self/fd/2"))
NAMESPACES = ("user", "pid", "net", "ipc", "uts", "cgroup", "mount")
# The process we spawn is a tiny shell that waits for one line on stdin before it execs bwrap: bwrap
# forks at once, and the cgroup must hold the process before it does.
GATE_SCRIPT = 'read _gate && exec "$0" "$@"'


def command(bw: Bwrap, inner: list[str], *, scratch_bytes: int = SCRATCH_BYTES, zygote: bool = False,
            once: bool = False, seccomp_fd: int | None = None,
            extra_ro_binds: tuple[tuple[str, str], ...] = (),
            env: dict[str, str] | None = None) -> list[str]:
    """bwrap argv that runs ``inner`` (an absolute interpreter path + args) in a fresh sandbox.

    zygote=True: the sandbox of a fork server (``forkserver.py``). Its first process keeps
    CAP_SYS_ADMIN *inside* the sandbox's user namespace just long enough to mount a /proc of its own
    (then drops every capability), and may create user namespaces: it makes a fresh set of
    namespaces for every execution, where it forbids nested user namespaces itself.
    once=True: the sandbox of one execution whose first process is the fork server's one-shot mode
    (``zygote.py once``): it keeps CAP_SYS_ADMIN and CAP_SYS_RESOURCE inside the sandbox's user namespace
    just long enough to build the execution's own root and move into it and to forbid nested user
    namespaces (user.max_user_namespaces=0), then drops every capability and loads the syscall filter.
    seccomp_fd: a descriptor holding the BPF syscall filter (``seccomp.memfd``), which bubblewrap loads
    last, right before it starts ``inner`` (the fork server loads it per execution instead).
    extra_ro_binds: (host path, path inside) pairs bound read-only besides the interpreter's view (the
    files of a command verifier, ``command.py``).
    """
    uid = str(SANDBOX_UID)
    argv = [
        bw.path,
        "--unshare-all", "--unshare-user", *(() if zygote or once else ("--disable-userns",)),
        "--uid", uid, "--gid", uid, "--hostname", "sandbox",
        "--cap-drop", "ALL", *(("--cap-add", "CAP_SYS_ADMIN") if zygote or once else ()),
        *(("--cap-add", "CAP_SYS_RESOURCE") if once else ()),
        "--die-with-parent", "--new-session", "--clearenv",
    ]
    # The interpreter's one variable (its hash seed) in an otherwise empty environment; a command
    # verifier (``command.py``, env={}) gets none, as it need not be Python.
    for name, value in (SANDBOX_ENV if env is None else env).items():
        argv += ["--setenv", name, value]
    for target, link in bw.symlinks:
        argv += ["--symlink", target, link]
    for path in bw.ro_binds:
        argv += ["--ro-bind", path, path]
    for path in bw.hidden:
        argv += ["--size", "4096", "--tmpfs", path, "--remount-ro", path]
    # A minimal /dev: the five harmless nodes and the fd links (bwrap's --dev also mounts a devpts
    # and a tty, which nothing here needs, at a few milliseconds per execution).
    argv += ["--proc", "/proc"]
    for node in DEV_NODES:
        argv += ["--dev-bind", node, node]
    for link, target in DEV_LINKS:
        argv += ["--symlink", target, link]
    for path in ("/tmp", "/dev/shm", WORKDIR):
        argv += ["--perms", "1777" if path != WORKDIR else "0700",
                 "--size", str(scratch_bytes), "--tmpfs", path]
    for source, target in extra_ro_binds:  # after the tmpfs mounts, which would hide a bind under /tmp
        argv += ["--ro-bind", source, target]
    # The root bwrap builds is itself a tmpfs: read-only once the mounts are in place.
    argv += ["--remount-ro", "/", "--chdir", WORKDIR]
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    return argv + list(inner)


def describe(bw: Bwrap, *, outside_uid: str = str(SANDBOX_UID),
             scratch_bytes: int = SCRATCH_BYTES) -> list[str]:
    """What ``command`` enforces, as the lines ``isolation`` reports."""
    return [
        f"namespaces: {', '.join(NAMESPACES)} (bubblewrap {bw.version.split()[-1]}, {bw.origin}); "
        "no nested user namespaces",
        f"uid {SANDBOX_UID} inside, {outside_uid} outside the sandbox; all capabilities dropped",
        "network: none (empty network namespace: nothing to connect to, not even the host's loopback)",
        "filesystem: a root of its own per execution (a fresh tmpfs: /proc of its pid namespace, pids only; "
        "/sandbox, /tmp, /dev/shm; five device nodes), moved into before the candidate's code exists: no host "
        "directory can be named (the view bound from the host, " + ", ".join(bw.ro_binds) + ", is unmounted first)",
        f"writable: private tmpfs cwd {WORKDIR}, /tmp and /dev/shm, {scratch_bytes // (1024 * 1024)} MiB "
        "each, gone after the execution",
        "processes: private /proc of a new pid namespace (harness and other sandboxes invisible)",
        "environment: cleared; new session; dies with the harness",
    ]
