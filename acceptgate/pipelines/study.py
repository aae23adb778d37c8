"""The human study's steps (seed 004, appendices G, H and K), as ``acceptgate study`` runs them: each
checks its inputs (a clear error naming the file and field, nothing written), does its work and returns
what the command reports.

    sample(records, raters, out, ...)       the blinded rating sheet and its key, from a judge run
    ratings(path, key, records, ...)        the filled-in sheet, validated line by line, summarised
    memory_select(out, ...)                 the tasks the experts label for the memory bank
    memory_freeze(memory, out, ...)         the labelled memory bank, frozen
    audit_subset(out, ...)                  E+ trajectories for the audit judge
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from acceptgate._util import boundedjson, outputs
from acceptgate._util.errors import InvalidInput
from acceptgate.judge import human, memory
from acceptgate.judge.records import Exemplar, HumanLabel, Loaded, Trajectory, load_jsonl, strict
from acceptgate.pipelines import judge as judge_io
from acceptgate.store import warehouse


def _trajectories(path: str | os.PathLike) -> dict[str, Trajectory]:
    return {t.trajectory_id: t for t in load_jsonl(path, Trajectory).valid}


def _require_files(*named: tuple[str | os.PathLike | None, str]) -> None:
    """Each (path, flag) names an existing file, checked in order: the first that does not is the error."""
    for name, flag in named:
        if not name or not Path(name).is_file():
            raise InvalidInput("no such file", source=str(name), field=flag)


def _verdicts(warehouse_path: str | os.PathLike | None, judge_run: str | None):
    """(run id, verdicts, run row) of a judge run (default: the latest) in an existing warehouse."""
    path = warehouse.resolve_path(warehouse_path)
    if not path.exists():
        raise InvalidInput("no warehouse here", source=str(path), field="--warehouse")
    return judge_io.read_verdicts(path, judge_run)


def _write_jsonl(path: str | os.PathLike, rows: list[dict]) -> Path:
    out = Path(path)
    outputs.check_file(out, "--out")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text("".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows), encoding="utf-8")
    tmp.replace(out)
    return out


# -- the rating sheet and the ratings ---------------------------------------------------------------

@dataclass(frozen=True)
class Sheet:
    run_id: str
    assignments: list[human.Assignment]
    sheet: Path  # for the raters
    key: Path  # for the study lead

    @property
    def over_defending(self) -> int:
        return sum(a.v_p for a in self.assignments)


def sample(records: str | os.PathLike, raters: list[str], out: str | os.PathLike, *, judge_run: str | None = None,
           per_disposition: int = 100, seed: int = 0, warehouse_path: str | os.PathLike | None = None) -> Sheet:
    """A stratified, blinded rating sheet of a judge run's verdicts (``human.sample``) and its key,
    written to the directory ``out``."""
    _require_files((records, "--records"))
    out_dir = outputs.check_dir(out, "--out")  # before any work; created only when the sheet is written
    run_id, verdicts, _ = _verdicts(warehouse_path, judge_run)
    trajs = _trajectories(records)
    missing = sorted(set(verdicts["trajectory_id"]) - set(trajs))
    if missing:
        raise InvalidInput(f"{len(missing)} judged trajectories are not in this file, e.g. {missing[0]}",
                           source=str(records), field="--records")
    got = human.sample(verdicts, raters, per_disposition=per_disposition, seed=seed)
    sheet, key = human.write_study(out_dir, got, trajs, seed)
    return Sheet(run_id, got, sheet, key)


@dataclass(frozen=True)
class Ratings:
    assignments: dict[str, human.Assignment]  # the key, by item id
    loaded: Loaded  # the ratings file's valid records and its errors

    @property
    def unrated(self) -> int:
        """Items without a valid rating (not rated yet, or rated invalidly)."""
        return len(self.assignments) - len(self.loaded.valid)

    def by_judgement(self) -> list[tuple[int, int, float, float]]:
        """(the judge's V_p, ratings, mean satisfaction, share accepted as is) for each V_p rated."""
        groups: dict[int, list] = {0: [], 1: []}
        for r in self.loaded.valid:
            groups[self.assignments[r.item_id].v_p].append(r)
        return [(v_p, len(rs), sum(r.satisfaction for r in rs) / len(rs), sum(r.accept_as_is for r in rs) / len(rs))
                for v_p, rs in groups.items() if rs]

    def by_degree(self) -> pd.DataFrame:
        return human.by_degree(self.assignments, self.loaded.valid)


def _read_key(path: str | os.PathLike) -> dict[str, human.Assignment]:
    assignments = {}
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        try:
            doc = boundedjson.loads(line)
            doc.pop("seed", None)
            assignments[doc["item_id"]] = human.Assignment(**doc)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise InvalidInput(f"not a key record written by 'study sample' ({type(exc).__name__}: {exc})",
                               source=str(path), record=f"line {n}", field="item_id") from None
    return assignments


def ratings(path: str | os.PathLike, key: str | os.PathLike, records: str | os.PathLike, *,
            strict_lines: bool = False) -> Ratings:
    """The ratings file (the sheet, filled in) validated against the key, line by line; with
    ``strict_lines`` an invalid line refuses the file."""
    _require_files((key, "--key"), (records, "--records"), (path, "RATINGS.jsonl"))
    assignments = _read_key(key)
    trajs = _trajectories(records)
    loaded = human.import_ratings(path, assignments, {t: len(trajs[t].actions) for t in trajs})
    if strict_lines:
        strict(loaded)
    return Ratings(assignments, loaded)


# -- the memory bank and the audit subset -----------------------------------------------------------

def _validation_tasks(labels_path: str | os.PathLike | None, records_path: str | os.PathLike | None) -> set[str]:
    """The tasks of the human labels of the validation split (none without ``labels_path``)."""
    if not labels_path:
        return set()
    _require_files((labels_path, "--validation"), (records_path, "--records"))
    labels = load_jsonl(labels_path, HumanLabel)
    strict(labels)
    trajs = _trajectories(records_path)
    unknown = sorted(h.trajectory_id for h in labels.valid if h.trajectory_id not in trajs)
    if unknown:
        raise InvalidInput(f"{len(unknown)} labelled trajectories are not in the records, e.g. {unknown[0]}",
                           source=str(labels_path), field="--validation")
    return {trajs[h.trajectory_id].task_id for h in labels.valid}


@dataclass(frozen=True)
class Selection:
    run_id: str
    chosen: list[memory.Selected]
    short: list[str]  # where fewer tasks than asked were found
    excluded: int  # validation tasks left out
    out: Path


def memory_select(out: str | os.PathLike, *, judge_run: str | None = None, config: str | None = None, run: int = 1,
                  validation: str | os.PathLike | None = None, records: str | os.PathLike | None = None,
                  seed: int = 0, warehouse_path: str | os.PathLike | None = None) -> Selection:
    """The tasks (two per disposition and prediction pattern of a judge run without memory) whose
    trajectories the experts label, none of the validation split's; written as jsonl to ``out``."""
    run_id, verdicts, _ = _verdicts(warehouse_path, judge_run)
    exclude = _validation_tasks(validation, records)
    patterns = memory.prediction_patterns(verdicts, config=config, run=run)
    chosen, short = memory.select_tasks(patterns, seed=seed, exclude=exclude)
    rows = [{"task_id": c.task_id, "disposition": c.disposition, "pattern": c.pattern,
             "trajectory_plus": c.trajectories[0], "trajectory_minus": c.trajectories[1], "seed": seed,
             "judge_run": run_id} for c in chosen]
    return Selection(run_id, chosen, short, len(exclude), _write_jsonl(out, rows))


def memory_freeze(memory_path: str | os.PathLike, out: str | os.PathLike, *, validation: str | os.PathLike,
                  records: str | os.PathLike, selection: str | os.PathLike | None = None) -> tuple[int, Path, str]:
    """The experts' labelled memory bank frozen (``memory.freeze``): (records, its path, its sha256)."""
    _require_files((memory_path, "--memory"))
    loaded = load_jsonl(memory_path, Exemplar)
    strict(loaded)
    selected = None
    if selection:
        _require_files((selection, "--selection"))
        selected = [memory.Selected(d["task_id"], d["disposition"], d["pattern"],
                                    (d["trajectory_plus"], d["trajectory_minus"]))
                    for d in map(json.loads, Path(selection).read_text(encoding="utf-8").splitlines())]
    outputs.check_file(Path(out), "--out")
    path, digest = memory.freeze(loaded.valid, out, validation_tasks=_validation_tasks(validation, records),
                                 selection=selected)
    return len(loaded.valid), path, digest


def audit_subset(out: str | os.PathLike, *, judge_run: str | None = None, per_config: int = memory.AUDIT_PER_CONFIG,
                 seed: int = 0, warehouse_path: str | os.PathLike | None = None) -> tuple[str, pd.DataFrame, Path]:
    """E+ trajectories of a judge run for the audit judge, ``per_config`` per configuration, written as
    jsonl to ``out``: (run id, the subset, its path)."""
    if per_config < 1:
        raise InvalidInput("must be at least 1", field="--per-config")
    run_id, verdicts, _ = _verdicts(warehouse_path, judge_run)
    subset = memory.audit_subset(verdicts, per_config=per_config, seed=seed)
    return run_id, subset, _write_jsonl(out, subset.to_dict("records"))
