"""Output paths are checked before any work starts: an unwritable output is invalid input (exit 2),
named by its path and option, found in the first second rather than after the whole run.

The check creates nothing that stays: it test-writes (and removes) a temporary file in the nearest
directory that exists on the way to the output, because permission bits alone do not tell (root
ignores them; sysfs, procfs and read-only mounts refuse writes that ``os.access`` allows). The writer
creates the missing directories later, when it writes.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from acceptgate._util.errors import InvalidInput


def _test_write(directory: Path, path: Path, field: str) -> None:
    try:
        fd, probe = tempfile.mkstemp(prefix=".acceptgate-write-test.", dir=directory)
    except OSError as exc:
        raise InvalidInput(f"cannot write in {directory}: {exc.strerror}", source=str(path), field=field) from None
    os.close(fd)
    os.unlink(probe)


def _parent(path: Path, field: str) -> Path:
    """The nearest existing ancestor, which must be a directory for the missing ones to be created."""
    parent = path.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise InvalidInput(f"cannot create its directory: {parent} is not a directory", source=str(path),
                           field=field)
    return parent


def check_file(path: str | os.PathLike, field: str) -> Path:
    """``path`` is, or can become, a regular file written by temp file + rename in its directory."""
    path = Path(path)
    if path.is_dir():
        raise InvalidInput("is a directory, expected a file", source=str(path), field=field)
    if path.exists() and not path.is_file():
        raise InvalidInput("exists and is not a regular file", source=str(path), field=field)
    _test_write(_parent(path, field), path, field)
    return path


def check_dir(path: str | os.PathLike, field: str) -> Path:
    """``path`` is, or can become, a directory built next to it and renamed into place."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InvalidInput("exists and is not a directory", source=str(path), field=field)
    _test_write(_parent(path, field), path, field)
    return path


def write_atomic(path: str | os.PathLike, data: str | bytes, *, mode: int = 0o644) -> Path:
    """Write a whole file or nothing: a temporary file beside ``path`` (its directories created),
    then renamed over it. ``mode``: the file's permissions (e.g. 0o600 for a secret)."""
    path = Path(path)
    path.absolute().parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.absolute().parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
