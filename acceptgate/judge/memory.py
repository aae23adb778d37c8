"""The judge's memory bank (seed 004, G.3), built and frozen; and the audit subset (K, Table 14).

G.3: an initial judge without memory predicts both variants of each candidate task. Each task pair falls
in one of four prediction patterns -- both variants flagged, only E+, only E-, neither. For every
disposition, two tasks are drawn from each pattern: 4 dispositions x 4 patterns x 2 = 32 tasks, 64
condition trajectories. The stratification controls coverage while sampling; it does not balance the
human labels. After the experts label the 64 trajectories, the memory file (their consensus records) is
frozen: written in canonical form with its sha256, and refused when any of its tasks is a validation
task (the memory and validation splits share no task).

``select_tasks`` draws the tasks (seeded); ``freeze`` checks the labelled records against the selection
and the validation tasks and writes the frozen file; ``audit_subset`` draws the trajectories a second
(audit) judge re-evaluates, 400 per configuration (seed 004 appendix K), spread over dispositions.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from acceptgate._util.hashing import sha256_text
from acceptgate._util.errors import InvalidInput
from acceptgate.judge.records import DISPOSITIONS, Exemplar

PATTERNS = ("both", "e_plus_only", "e_minus_only", "neither")
PER_PATTERN = 2
AUDIT_PER_CONFIG = 400


def pattern(plus: int, minus: int) -> str:
    return PATTERNS[0] if plus and minus else PATTERNS[1] if plus else PATTERNS[2] if minus else PATTERNS[3]


@dataclass(frozen=True)
class Selected:
    task_id: str
    disposition: str
    pattern: str
    trajectories: tuple[str, str]  # (E+, E-)


def prediction_patterns(verdicts: pd.DataFrame, *, config: str | None = None, run: int = 1) -> pd.DataFrame:
    """One row per task: its disposition, the initial judge's V_p on E+ and on E-, the pattern, and the
    two trajectories (from one agent configuration and run; default the first configuration by name)."""
    valid = verdicts[verdicts["status"] == "valid"]
    if valid.empty:
        raise InvalidInput("no valid verdicts to read prediction patterns from", field="--judge-run")
    config = config or sorted(valid["config"].unique())[0]
    part = valid[(valid["config"] == config) & (valid["run"] == run)]
    if part.empty:
        raise InvalidInput(f"no valid verdicts for configuration {config!r}, run {run}", field="--config")
    wide = part.pivot_table(index=["task_id", "disposition"], columns="condition", values=["v_p", "trajectory_id"],
                            aggfunc="first")
    rows = []
    for (task_id, disposition), r in wide.iterrows():
        if pd.isna(r.get(("v_p", "E+"))) or pd.isna(r.get(("v_p", "E-"))):
            continue  # one variant has no valid verdict: the task's pattern is unknown
        plus, minus = int(r[("v_p", "E+")]), int(r[("v_p", "E-")])
        rows.append({"task_id": task_id, "disposition": disposition, "v_p_plus": plus, "v_p_minus": minus,
                     "pattern": pattern(plus, minus), "trajectory_plus": r[("trajectory_id", "E+")],
                     "trajectory_minus": r[("trajectory_id", "E-")]})
    return pd.DataFrame(rows).sort_values("task_id").reset_index(drop=True)


def select_tasks(patterns: pd.DataFrame, *, seed: int = 0, per_pattern: int = PER_PATTERN,
                 exclude: set[str] = frozenset()) -> tuple[list[Selected], list[str]]:
    """``per_pattern`` tasks per (disposition, pattern), drawn at random (seeded), never from ``exclude``
    (the validation tasks). Returns the selection and a note per stratum that had fewer tasks."""
    rng = np.random.default_rng([int(seed), 11])
    out, short = [], []
    frame = patterns[~patterns["task_id"].isin(exclude)]
    for d in DISPOSITIONS:
        for p in PATTERNS:
            stratum = frame[(frame["disposition"] == d) & (frame["pattern"] == p)].sort_values("task_id")
            take = rng.permutation(len(stratum))[:per_pattern]
            if len(take) < per_pattern:
                short.append(f"{d}/{p}: {len(take)} of {per_pattern} tasks available")
            for i in sorted(take):
                r = stratum.iloc[i]
                out.append(Selected(r.task_id, d, p, (r.trajectory_plus, r.trajectory_minus)))
    return out, short


def canonical(records: list[Exemplar]) -> str:
    rows = sorted((r.model_dump(mode="json") for r in records), key=lambda d: d["exemplar_id"])
    return "".join(json.dumps(d, sort_keys=True, ensure_ascii=False) + "\n" for d in rows)


def freeze(records: list[Exemplar], out: str | Path, *, validation_tasks: set[str],
           selection: list[Selected] | None = None) -> tuple[Path, str]:
    """Write the frozen memory bank (canonical jsonl) and ``<file>.sha256``; refuse (InvalidInput, nothing
    written) a task shared with validation, a duplicate id, or -- given the selection -- a record of a task
    not selected or a selected task without both condition records."""
    overlap = sorted({r.task_id for r in records} & set(validation_tasks))
    if overlap:
        raise InvalidInput(f"{len(overlap)} memory tasks are validation tasks too (the splits must not share a "
                           f"task), e.g. {overlap[0]}", field="--memory")
    ids = [r.exemplar_id for r in records]
    if len(ids) != len(set(ids)):
        raise InvalidInput("duplicate exemplar_id", field="--memory")
    if selection is not None:
        chosen = {s.task_id for s in selection}
        stray = sorted({r.task_id for r in records} - chosen)
        if stray:
            raise InvalidInput(f"records of tasks not in the selection, e.g. {stray[0]}", field="--memory")
        have = {(r.task_id, r.condition) for r in records}
        missing = sorted(f"{t} {c}" for t in chosen for c in ("E+", "E-") if (t, c) not in have)
        if missing:
            raise InvalidInput(f"{len(missing)} selected trajectories have no labelled record, e.g. {missing[0]}",
                               field="--memory")
    text = canonical(records)
    digest = sha256_text(text)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    for path, content in ((out, text), (out.with_name(out.name + ".sha256"), f"{digest}  {out.name}\n")):
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(content, encoding="utf-8")
        tmp.replace(path)
    return out, digest


def check_frozen(path: str | Path) -> str:
    """The frozen bank's sha256, refusing a file that no longer matches its recorded hash."""
    path = Path(path)
    side = path.with_name(path.name + ".sha256")
    if not side.is_file():
        raise InvalidInput("not a frozen memory bank (no .sha256 beside it)", source=str(path), field="--memory")
    want = side.read_text(encoding="utf-8").split()[0]
    got = hashlib.sha256(path.read_bytes()).hexdigest()
    if got != want:
        raise InvalidInput(f"changed since it was frozen (sha256 {got[:16]}, recorded {want[:16]})",
                           source=str(path), field="--memory")
    return got


def audit_subset(verdicts: pd.DataFrame, *, per_config: int = AUDIT_PER_CONFIG, seed: int = 0) -> pd.DataFrame:
    """E+ trajectories for the audit judge: ``per_config`` per configuration (all when fewer), spread
    over the dispositions as evenly as they allow, seeded. One row per trajectory."""
    rng = np.random.default_rng([int(seed), 13])
    frame = verdicts[verdicts["condition"] == "E+"].sort_values("trajectory_id")
    picked = []
    for config in sorted(frame["config"].unique()):
        part = frame[frame["config"] == config]
        strata = {d: list(part[part["disposition"] == d].index[rng.permutation(int((part["disposition"] == d).sum()))])
                  for d in DISPOSITIONS}
        take: list = []
        while len(take) < per_config and any(strata.values()):  # round-robin: equal allocation, then the rest
            for d in DISPOSITIONS:
                if strata[d] and len(take) < per_config:
                    take.append(strata[d].pop(0))
        picked += take
    out = frame.loc[picked, ["trajectory_id", "task_id", "config", "run", "disposition"]].reset_index(drop=True)
    return out
