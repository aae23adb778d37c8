"""What acceptgate keeps between runs under its cache directory (``settings().cache_dir``), and clearing it.

Two parts, each rebuilt on demand when gone:

- ``imports``: the import cache (``importcache.py``): imported suites and import results keyed by the
  data file's hash, the limit, acceptgate's code and the packages that shape a suite. A hit saves the
  import and its gauge runs (seconds to minutes per data set).
- ``prefect``: Prefect's home when PREFECT_HOME is not set: the database of the temporary Prefect server
  that flow commands start (flow-run history) and Prefect's settings. Cleared only on request
  (``--all``), and never while a command is running.

Nothing else in the directory is touched, and a PREFECT_HOME set elsewhere is not acceptgate's to clear.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from acceptgate._util.settings import settings


@dataclass(frozen=True)
class Part:
    name: str
    path: Path
    what: str
    files: int
    bytes: int


def _size(path: Path) -> tuple[int, int]:
    files = size = 0
    if path.is_dir():
        for item in path.rglob("*"):
            try:
                if item.is_file() and not item.is_symlink():
                    files += 1
                    size += item.stat().st_size
            except OSError:  # removed while we look
                continue
    return files, size


def parts() -> list[Part]:
    """The cache's parts under this process's settings, with their current size."""
    s = settings()
    found = [("imports", s.imports_dir, "imported suites and import results (rebuilt by the next import)")]
    if s.prefect_home is None:
        found.append(("prefect", s.prefect_home_path,
                      "Prefect's home: the temporary server's database of flow runs, Prefect's settings"))
    return [Part(name, path, what, *_size(path)) for name, path, what in found]


def clear(names: set[str]) -> list[Part]:
    """Remove the named parts; returns what was removed (with the size it had)."""
    removed = []
    for part in parts():
        if part.name in names and part.path.is_dir():
            shutil.rmtree(part.path)
            removed.append(part)
    return removed


def human(size: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size} B"  # pragma: no cover
