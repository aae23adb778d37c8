"""The syscall filter every backend puts on the candidate: one deny list, built with libseccomp.

The list closes the kernel interfaces that cross an execution's boundaries or widen the kernel's attack
surface without any use to a test candidate: keyrings (shared per host uid, outside every namespace),
io_uring, userfaultfd, bpf, perf events, reading or writing another process's memory, ptrace, mounts
and namespaces, kexec and modules, the clocks, and a few more. A denied call fails with EPERM (clone3
with ENOSYS, so that the C library falls back to clone, where namespace flags are checked); nothing is
killed, so a candidate that merely probes gets an error it can handle.

Shared kernel state that outlives or spans executions is closed by name and by argument (ARG_RULES):
- sockets: socket() for every family (the protocol is two pipes; AF_VSOCK's port space is the whole
  machine's, outside any network namespace, and so is the host's loopback and abstract unix namespace
  where there is no network namespace); socketpair() except AF_UNIX (anonymous, asyncio and
  multiprocessing use it); what would give a socketpair's socket a name or reach one: bind, connect,
  listen, accept, sendto with an address, sendmsg and sendmmsg (on docker, sendmsg, sendmmsg, socket and
  connect are loaded by the runner, runner_bpf(): the container's keeper passes descriptors with
  sendmsg and connects once to the host's socket);
- locks and watches on the files every execution shares read-only: fcntl's byte-range, OFD, lease and
  notify commands, flock(), inotify and fanotify;
- the page cache of those files: fadvise, readahead, mincore, cachestat, process_madvise, madvise
  advice that loads, evicts, probes or merges pages (WILLNEED, REMOVE, MERGEABLE, COLD, PAGEOUT,
  POPULATE_*, COLLAPSE, HWPOISON, SOFT_OFFLINE; DONTNEED and FREE stay: they free the caller's own
  mappings, which every allocator needs, and evict nothing from the page cache), preadv2/pwritev2
  with any flag (RWF_NOWAIT tells a cached page from one that is not), Linux AIO (RWF_NOWAIT again),
  prctl(PR_SET_MEMORY_MERGE);
- System V IPC and POSIX message queues (the host's, where there is no IPC namespace).

The filter is built with pyseccomp over the system's libseccomp (architecture checks included) and
exported as BPF once per process. Where it goes:

- ``local-bwrap``: bubblewrap's ``--seccomp FD`` (bwrap loads it last, right before the runner starts);
- fork-server mode: each execution's runner loads it once it has joined the execution's namespaces and
  built its view, before it waits for the go (the fork server itself needs clone with namespace flags,
  setns and sendmsg, so its own sandbox has no filter; ``zygote.py``);
- ``local-rlimits``: the runner loads it itself, before the candidate's code exists (``runner.py``);
- ``docker``: ``security_opt=["seccomp=<json>"]`` with the same rules as Docker's JSON profile, but for
  SENDMSG, KEEPER_CONNECT, the mount and namespace calls (FORK_SERVER_CALLS, clone with namespace
  flags): the container's fork server loads bpf() into each runner it forks, and a runner started by
  fork + exec adds them itself (``runner_bpf()``) before the candidate's code exists.
"""

from __future__ import annotations

import functools
import json
import os
import tempfile

DENIED = (
    # keyrings: per host uid, visible across every namespace
    "keyctl", "add_key", "request_key",
    # kernel interfaces with their own memory-sharing or privilege paths
    "io_uring_setup", "io_uring_enter", "io_uring_register", "userfaultfd", "bpf", "perf_event_open",
    "process_vm_readv", "process_vm_writev", "ptrace", "kcmp", "pidfd_getfd",
    # mounts and namespaces
    "mount", "umount2", "unshare", "setns", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen",
    "fsconfig", "fsmount", "fspick", "mount_setattr",
    # the machine
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
    "swapon", "swapoff", "acct", "quotactl", "syslog", "vhangup", "iopl", "ioperm",
    "clock_settime", "clock_adjtime", "adjtimex", "settimeofday",
    "open_by_handle_at", "name_to_handle_at", "lookup_dcookie", "uselib", "fanotify_init",
    # sockets of every family (socketpair of AF_UNIX is allowed below, by argument)
    "socket",
    # unix socket names: without socket() the only sockets are socketpair's, already connected, but one
    # can still be bound to an abstract name or address one (connect; sendto below, by argument), which
    # reaches whatever else lives in the network namespace (the host's without one, a reused container's)
    "bind", "connect", "listen", "accept", "accept4",
    # locks and watches on shared files (fcntl's lock commands are denied by argument below)
    "flock", "inotify_init", "inotify_init1", "inotify_add_watch", "fanotify_mark",
    # the page cache: controlling or probing what is resident
    "fadvise64", "readahead", "mincore", "cachestat", "process_madvise",
    "io_setup", "io_submit", "io_getevents", "io_pgetevents", "io_cancel", "io_destroy",
    # System V IPC and POSIX message queues
    "shmget", "shmat", "shmdt", "shmctl", "semget", "semop", "semtimedop", "semctl",
    "msgget", "msgsnd", "msgrcv", "msgctl",
    "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
)
AF_UNIX = 1
# Denied to every candidate, but not by the docker container's profile: the in-container keeper passes
# descriptors with sendmsg (there the runner loads runner_bpf() itself). sendmsg can name a destination
# (msg_name, behind a pointer no filter can read) and can send a socket into itself (SCM_RIGHTS), a
# cycle that outlives every process of the execution until the kernel's unix garbage collector runs.
SENDMSG = ("sendmsg", "sendmmsg")
# Denied to every candidate (DENIED), but not by the docker container's profile either: the keeper
# connects to the host's socket once, at its start (pool.SocketChannel); runner_bpf() has them.
KEEPER_CONNECT = ("socket", "connect")
# Denied to every candidate (DENIED, and clone with NAMESPACE_FLAGS), but not by the docker container's
# profile: the container's fork server (zygote.py, as in a local slot) makes each execution's namespaces
# and root with them; every runner it forks loads bpf(), and runner_bpf() has them too.
FORK_SERVER_CALLS = ("mount", "umount2", "unshare", "setns", "pivot_root")
# fcntl commands: F_GETLK, F_SETLK, F_SETLKW (and their 32-bit *64 numbers), F_OFD_GETLK, F_OFD_SETLK,
# F_OFD_SETLKW, F_SETLEASE, F_GETLEASE, F_NOTIFY
FCNTL_DENIED = (5, 6, 7, 12, 13, 14, 36, 37, 38, 1024, 1025, 1026)
# madvise advice: WILLNEED, REMOVE, MERGEABLE, COLD, PAGEOUT, POPULATE_READ, POPULATE_WRITE, COLLAPSE,
# HWPOISON, SOFT_OFFLINE
MADVISE_DENIED = (3, 9, 12, 20, 21, 22, 23, 25, 100, 101)
PR_SET_MEMORY_MERGE = 67
# (syscall, [(argument index, operator, value)]): denied (EPERM) when every comparison holds.
ARG_RULES = (
    [("socketpair", [(0, "NE", AF_UNIX)])]
    + [("fcntl", [(1, "EQ", cmd)]) for cmd in FCNTL_DENIED]
    + [("madvise", [(2, "EQ", advice)]) for advice in MADVISE_DENIED]
    + [("preadv2", [(5, "NE", 0)]), ("pwritev2", [(5, "NE", 0)])]
    + [("prctl", [(0, "EQ", PR_SET_MEMORY_MERGE)])]
    + [("sendto", [(4, "NE", 0)])]  # with a destination address (send() passes none)
)
# clone flags that make namespaces: clone() with any of them is denied (fork and threads are not).
NAMESPACE_FLAGS = {"CLONE_NEWNS": 0x00020000, "CLONE_NEWCGROUP": 0x02000000, "CLONE_NEWUTS": 0x04000000,
                   "CLONE_NEWIPC": 0x08000000, "CLONE_NEWUSER": 0x10000000, "CLONE_NEWPID": 0x20000000,
                   "CLONE_NEWNET": 0x40000000, "CLONE_NEWTIME": 0x00000080}
EPERM, ENOSYS = 1, 38


class SeccompUnavailable(RuntimeError):
    """libseccomp or its Python binding is missing."""


def _library():
    try:
        import pyseccomp
    except (ImportError, OSError) as exc:  # OSError: the binding is there but libseccomp is not
        raise SeccompUnavailable(f"pyseccomp over libseccomp is needed for the syscall filter: {exc}") from exc
    return pyseccomp


def _resolvable(sc, name: str) -> bool:
    try:
        return sc.resolve_syscall(sc.Arch.NATIVE, name) >= 0
    except Exception:
        return False


@functools.cache
def bpf() -> bytes:
    """The filter as a BPF program for this machine's architecture (what prctl/bwrap load)."""
    return _export(DENIED + SENDMSG, full=True)


@functools.cache
def runner_bpf() -> bytes:
    """What the docker runner adds to its container's profile before the candidate exists: SENDMSG,
    KEEPER_CONNECT, FORK_SERVER_CALLS and clone with namespace flags."""
    return _export(SENDMSG + KEEPER_CONNECT + FORK_SERVER_CALLS, full=False, namespaces=True)


def _export(denied: tuple[str, ...], *, full: bool, namespaces: bool = False) -> bytes:
    sc = _library()
    flt = sc.SyscallFilter(sc.ALLOW)
    try:  # a binary tree of syscall numbers rather than a linear list: fewer instructions per call
        flt.set_attr(sc.Attr.CTL_OPTIMIZE, 2)
    except Exception:  # libseccomp < 2.5: the linear filter, same rules
        pass
    for name in denied:
        if _resolvable(sc, name):
            flt.add_rule(sc.ERRNO(EPERM), name)
    if full or namespaces:
        for flag in NAMESPACE_FLAGS.values():
            flt.add_rule(sc.ERRNO(EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    if not full:
        return _bytes(flt)
    if _resolvable(sc, "clone3"):
        flt.add_rule(sc.ERRNO(ENOSYS), "clone3")
    for name, comparisons in ARG_RULES:
        if _resolvable(sc, name):
            flt.add_rule(sc.ERRNO(EPERM), name, *(sc.Arg(i, getattr(sc, op), v) for i, op, v in comparisons))
    return _bytes(flt)


def _bytes(flt) -> bytes:
    with tempfile.TemporaryFile() as f:
        flt.export_bpf(f)
        f.seek(0)
        return f.read()


def docker_profile() -> str:
    """The same rules as a Docker seccomp profile (JSON), for ``security_opt``, except SENDMSG,
    KEEPER_CONNECT (the keeper's), FORK_SERVER_CALLS and clone with namespace flags (the fork server's):
    every runner loads them itself (bpf() or runner_bpf())."""
    kept = KEEPER_CONNECT + FORK_SERVER_CALLS
    syscalls = [
        {"names": [name for name in DENIED if name not in kept], "action": "SCMP_ACT_ERRNO", "errnoRet": EPERM},
        {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": ENOSYS},
    ]
    for name, comparisons in ARG_RULES:
        syscalls.append({"names": [name], "action": "SCMP_ACT_ERRNO", "errnoRet": EPERM,
                         "args": [{"index": i, "value": v, "op": "SCMP_CMP_" + op} for i, op, v in comparisons]})
    return json.dumps({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": syscalls}, sort_keys=True)


def problem() -> str:
    """Why the filter cannot be built here ("" when it can)."""
    try:
        bpf()
    except SeccompUnavailable as exc:
        return str(exc)
    return ""


def memfd() -> int:
    """A readable descriptor holding the BPF program (for ``bwrap --seccomp FD``); the caller closes it."""
    fd = os.memfd_create("acceptgate-seccomp", 0)
    os.write(fd, bpf())
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def describe() -> str:
    return ("seccomp: denied (EPERM) " + ", ".join(DENIED) + "; clone with namespace flags; clone3 "
            "(ENOSYS, so clone is used); socketpair except AF_UNIX; fcntl lock, lease and notify commands; "
            "madvise advice that loads, evicts, probes or merges pages; preadv2/pwritev2 with flags; "
            "prctl(PR_SET_MEMORY_MERGE); sendto with an address; " + ", ".join(SENDMSG))
