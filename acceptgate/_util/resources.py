"""Data files that ship inside the package (SQL migrations and views, expectation suites, deployment
files, demo inputs), found with importlib.resources: the same in an editable checkout and in a wheel
installed anywhere."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def data_dir(package: str) -> Path:
    """The folder of the data package ``package`` (e.g. ``acceptgate.sql``) as a real directory.

    acceptgate ships as plain files (never a zip), so the package's files are a directory on disk; a
    layout where they are not is a broken install, said so here rather than as a missing file later."""
    found = resources.files(package)
    if not isinstance(found, Path) or not found.is_dir():
        raise RuntimeError(f"acceptgate's data package {package} is not a directory on disk ({found!r}): "
                           "reinstall acceptgate from its wheel or checkout")
    return found
