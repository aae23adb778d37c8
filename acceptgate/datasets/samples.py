"""Samples files (jsonl or jsonl.gz of task_id with a completion or a solution), read and checked
record by record: a bad line is a LineProblem naming its line and field."""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from pathlib import Path

from acceptgate._util import boundedjson
from acceptgate._util.errors import InvalidInput


@dataclass(frozen=True)
class Sample:
    task_id: str
    line: int  # 1-based line in the file
    index: int  # 0-based position among this task's samples
    text: str
    kind: str  # "solution" | "completion"

    def program(self, prompt: str) -> str:
        return self.text if self.kind == "solution" else prompt + self.text


@dataclass(frozen=True)
class LineProblem:
    line: int
    field: str | None
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}" + (f", field {self.field!r}" if self.field else "")
        return f"{where}: {self.message}"


@dataclass
class SampleFile:
    path: str
    samples: list[Sample]
    problems: list[LineProblem]

    def by_task(self) -> dict[str, list[Sample]]:
        out: dict[str, list[Sample]] = {}
        for s in self.samples:
            out.setdefault(s.task_id, []).append(s)
        return out


# A record is a program and a task id: bounded so that one hostile line costs a bounded read and is
# one invalid record, never the batch.
MAX_LINE_CHARS = 16 * 1024 * 1024
MAX_RECORD_DEPTH = 20


def _lines(fh):
    """(line number, text) of each line, a line longer than MAX_LINE_CHARS as None (read past)."""
    lineno = 0
    while True:
        raw = fh.readline(MAX_LINE_CHARS + 1)
        if not raw:
            return
        lineno += 1
        if len(raw) > MAX_LINE_CHARS and not raw.endswith("\n"):
            while raw and not raw.endswith("\n"):
                raw = fh.readline(MAX_LINE_CHARS)
            yield lineno, None
            continue
        yield lineno, raw


def _open_text(path: Path):
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", newline="")
    return path.open("r", encoding="utf-8", newline="")


def _parse_line(raw: str, lineno: int) -> tuple[str, str, str] | LineProblem:
    try:
        doc = boundedjson.loads(raw, max_depth=MAX_RECORD_DEPTH)
    except boundedjson.JSONInputError as exc:
        return LineProblem(lineno, None, f"not JSON ({exc.message.removeprefix('not JSON: ')}" +
                           (f" at column {exc.column})" if exc.column is not None else ")"))
    if not isinstance(doc, dict):
        return LineProblem(lineno, None, f"expected a JSON object, got {type(doc).__name__}")
    task_id = doc.get("task_id")
    if not isinstance(task_id, str) or not task_id:
        return LineProblem(lineno, "task_id", "missing or not a non-empty string")
    has_sol, has_comp = "solution" in doc, "completion" in doc
    if has_sol == has_comp:
        return LineProblem(lineno, "solution", "need exactly one of 'solution' or 'completion'")
    kind = "solution" if has_sol else "completion"
    if not isinstance(doc[kind], str):
        return LineProblem(lineno, kind, f"not a string ({type(doc[kind]).__name__})")
    return task_id, kind, doc[kind]


def read_samples(path: str | Path) -> SampleFile:
    """Parse a samples file. Invalid lines are collected (with line and field), not fatal.

    Raises InvalidInput when the file cannot be read at all (missing, not UTF-8, not gzip).
    """
    path = Path(path)
    samples: list[Sample] = []
    problems: list[LineProblem] = []
    counts: dict[str, int] = {}
    try:
        with _open_text(path) as fh:
            for lineno, raw in _lines(fh):
                if raw is None:
                    problems.append(LineProblem(lineno, None, f"longer than {MAX_LINE_CHARS} characters"))
                    continue
                if not raw.strip():
                    continue
                parsed = _parse_line(raw, lineno)
                if isinstance(parsed, LineProblem):
                    problems.append(parsed)
                    continue
                task_id, kind, text = parsed
                index = counts.get(task_id, 0)
                counts[task_id] = index + 1
                samples.append(Sample(task_id, lineno, index, text, kind))
    except FileNotFoundError:
        raise InvalidInput("samples file not found", source=str(path)) from None
    except IsADirectoryError:
        raise InvalidInput("is a directory, expected a samples .jsonl file", source=str(path)) from None
    except OSError as exc:  # gzip.BadGzipFile is an OSError
        raise InvalidInput(f"cannot read samples: {exc}", source=str(path)) from None
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"not UTF-8 (byte {exc.start})", source=str(path)) from None
    return SampleFile(str(path), samples, problems)


def require_valid(sf: SampleFile, *, strict: bool = True) -> SampleFile:
    """Strict use (``--strict``): any invalid line is an error. Either way a file without one valid
    sample is an error: there is nothing to run."""
    if sf.problems and strict:
        first = sf.problems[0]
        more = f" (and {len(sf.problems) - 1} more invalid lines)" if len(sf.problems) > 1 else ""
        raise InvalidInput(first.message + more, source=sf.path, record=f"line {first.line}",
                           field=first.field)
    if not sf.samples:
        detail = f" ({len(sf.problems)} invalid lines, first: {sf.problems[0]})" if sf.problems else ""
        raise InvalidInput(f"no valid samples in file{detail}", source=sf.path)
    return sf
