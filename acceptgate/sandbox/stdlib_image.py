"""The standard library as the sandbox's runner imports it: from memory, never from a file.

Each execution's root is a fresh tmpfs with no host directory in it (``zygote.py``), so what a candidate
imports cannot come from the host's files. The fork server reads this *image* once, before any
execution: every pure-Python module of the sandbox interpreter's standard library, compiled by that
interpreter (``zygote.py index``): an index {module name: (is package, path, offset, length)} and each
module's code, marshalled and compressed. It reaches the fork server as a sealed memfd (no name, no
writer), which it maps privately: every execution reads the same pages, none can write them. The extension modules of lib-dynload
are imported by the fork server itself (``extension_modules``), so a runner maps them already.

The image is built once per harness process (about 2 s: most of the stdlib has no cached bytecode on
Debian) and kept on disk beside the import cache, keyed by the interpreter, the stat of every source
file and the builder's code, so that a later process reads it in milliseconds.

``mapped_files``: the host files a runner still has mapped once it has moved into its root (the
interpreter, the libraries it and the preloaded extension modules link, those modules): the only host
files a candidate can still read (``/proc/self/exe``), so the only ones whose page cache the harness
pins (``residency.py``).
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import subprocess
import tempfile
import threading
from pathlib import Path

from acceptgate._util import forksafe
from acceptgate.sandbox import hostprobe

# lib-dynload modules a fork server does not import: test modules, terminal and GUI bindings, the
# NIS/dbm/audio device interfaces (no candidate of a code benchmark needs them; several read host
# files or devices when initialised); and two whose import loads a whole package of Python modules into
# every runner (tenths of a second per local-bwrap execution), where the package has a pure-Python
# fallback: _asyncio (asyncio) and _zoneinfo (zoneinfo)
EXTENSIONS_SKIPPED = frozenset(("_curses", "_curses_panel", "readline", "nis", "ossaudiodev", "_dbm", "_gdbm",
                                "_tkinter", "_ctypes_test", "xxlimited", "xxlimited_35", "_xxsubinterpreters",
                                "_xxtestfuzz", "_crypt", "_asyncio", "_zoneinfo"))
BUILD_SECONDS = 300.0
F_SEAL_SEAL, F_SEAL_SHRINK, F_SEAL_GROW, F_SEAL_WRITE = 1, 2, 4, 8

_lock = threading.Lock()
forksafe.renew_in_child(globals(), _lock=threading.Lock)


class ImageUnavailable(RuntimeError):
    """The standard library's image cannot be built here (the message says why)."""


def dynload_dir(python: str) -> str:
    return os.path.join(hostprobe.stdlib_dir(python), "lib-dynload")


@functools.cache
def extension_modules(python: str) -> tuple[str, ...]:
    """The lib-dynload modules a fork server imports before any execution (sorted)."""
    found = set()
    try:
        names = os.listdir(dynload_dir(python))
    except OSError:
        return ()
    for name in names:
        module = name.split(".")[0]
        if name.endswith(".so") and module not in EXTENSIONS_SKIPPED and not module.startswith("_test"):
            found.add(module)
    return tuple(sorted(found))


def _key(python: str) -> str:
    """What the image depends on: the interpreter, every source file's stat, the builder's code."""
    from acceptgate.sandbox.backend import zygote_source

    stdlib = hostprobe.stdlib_dir(python)
    digest = hashlib.sha256(zygote_source().encode())
    st = os.stat(python)
    digest.update(f"{os.path.realpath(python)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    for top, dirs, files in os.walk(stdlib):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".py"):
                try:
                    st = os.stat(os.path.join(top, name))
                except OSError:
                    continue
                digest.update(f"{top}/{name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _cache_dir() -> Path:
    from acceptgate._util.settings import settings

    return settings().imports_dir / "stdlib-images"


def _build(python: str) -> bytes:
    from acceptgate.sandbox.backend import zygote_source

    try:
        proc = subprocess.run([python, "-I", "-S", "-B", "-c", zygote_source(), "index",
                               hostprobe.stdlib_dir(python)], capture_output=True, timeout=BUILD_SECONDS,
                              env={}, cwd="/")
    except (OSError, subprocess.SubprocessError) as exc:
        raise ImageUnavailable(f"cannot compile the standard library with {python}: {exc}") from None
    if proc.returncode != 0 or not proc.stdout:
        raise ImageUnavailable(f"compiling the standard library with {python} failed (exit {proc.returncode}): "
                               f"{proc.stderr.decode('utf-8', 'replace')[-300:]}")
    return proc.stdout


@functools.cache
def image(python: str) -> bytes:
    """The standard library's image for ``python``: from the disk cache, else built (and stored)."""
    key = _key(python)
    path = _cache_dir() / f"{key}.marshal"
    try:
        return path.read_bytes()
    except OSError:
        pass
    data = _build(python)
    try:  # written aside and renamed into place: never half-written
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".tmp-", delete=False) as f:
            f.write(data)
        os.replace(f.name, path)
    except OSError:
        pass  # no cache here: built again by the next process
    return data


def memfd(python: str) -> int:
    """A sealed memfd holding the image (readable, never writable again); the caller closes it."""
    with _lock:
        data = image(python)
    fd = os.memfd_create("acceptgate-stdlib", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


def preload(python: str) -> tuple[str, ...]:
    """What a fork server imports before any execution: backend.PRELOAD and the extension modules."""
    from acceptgate.sandbox.backend import PRELOAD

    return PRELOAD + tuple(m for m in extension_modules(python) if m not in PRELOAD)


@functools.cache
def mapped_files(python: str) -> tuple[str, ...]:
    """The host files a runner keeps mapped in its root: the interpreter, the preloaded extension
    modules and every shared library they load (as ldd lists them; real paths)."""
    dynload = dynload_dir(python)
    modules = set(extension_modules(python))
    names = os.listdir(dynload) if os.path.isdir(dynload) else []
    objects = [os.path.realpath(python)] + sorted(
        os.path.join(dynload, name) for name in names if name.endswith(".so") and name.split(".")[0] in modules)
    found = set(objects)
    try:
        text = subprocess.run(["ldd", *objects], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        text = ""
    for line in text.splitlines():
        parts = line.split()
        if "=>" in parts[:-1] and parts[parts.index("=>") + 1].startswith("/"):
            found.add(os.path.realpath(parts[parts.index("=>") + 1]))
        elif parts and parts[0].startswith("/") and not parts[0].endswith(":"):
            found.add(os.path.realpath(parts[0]))
    return tuple(sorted(found))
