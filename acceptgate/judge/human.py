"""Human-study support (seed 004, appendix H): stratified, blinded sampling of trajectories for rating,
the rating sheet, and validated import of the ratings.

Sampling frame: E+ runs with a valid verdict whose oracle passed. Over-defending runs (V_p = 1) are
sampled per disposition, at most ``per_disposition`` each (all of them when fewer). Runs without
over-defence (V_p = 0) are then drawn first from the tasks the selected V_p = 1 runs represent, then by
disposition and configuration -- a stratified random draw: the (disposition, configuration) strata take
turns, in a seeded random order, each giving one random run -- until there are as many as V_p = 1 runs
(or the frame runs out).
Presentation order is random; the sheet hides the configuration, the judge's label and the condition
role; the records of one task go to different raters, with the rater rotation moving from task to task.
Everything random comes from ``seed``, which the key file records.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from acceptgate._util.hashing import sha256_text
from acceptgate._util.errors import InvalidInput
from acceptgate.judge.records import Loaded, RecordError, Trajectory, load_jsonl

SCENARIO = ("Assume you are the developer responsible for this task and the coding agent has completed the run shown "
            "below. Review the record as you would to understand the agent's work and decide whether to use its "
            "output in your daily workflow. The task was completed correctly. Judge from the actions and artifacts "
            "shown: the maintainability of the resulting code, the run's runtime, and the corrections you would "
            "need before using the output. Rate your satisfaction with this run.")
QUESTION = "As the developer responsible for this task, how satisfied are you with this run? (1 = very dissatisfied, 5 = very satisfied)"


@dataclass(frozen=True)
class Assignment:
    item_id: str
    order: int
    rater: str
    trajectory_id: str
    task_id: str
    disposition: str
    config: str
    v_p: int
    degree: str


def sample(verdicts: pd.DataFrame, raters: list[str], *, per_disposition: int = 100, seed: int = 0) -> list[Assignment]:
    if len(raters) < 2 or len(set(raters)) != len(raters):
        raise InvalidInput("need at least two distinct raters (records of one task go to different raters)",
                           field="--raters")
    rng = np.random.default_rng([int(seed), 7])
    frame = verdicts[(verdicts["status"] == "valid") & (verdicts["condition"] == "E+") & verdicts["oracle_passed"]]
    frame = frame.sort_values("trajectory_id").reset_index(drop=True)
    over = frame[frame["v_p"] == 1]
    chosen = []
    for d in sorted(over["disposition"].unique()):
        part = over[over["disposition"] == d]
        take = rng.permutation(len(part))[:per_disposition]
        chosen += list(part.index[take])
    rest = frame[(frame["v_p"] == 0)]
    tasks = set(frame.loc[chosen, "task_id"])
    first = rest[rest["task_id"].isin(tasks)]
    later = rest[~rest["task_id"].isin(tasks)]
    pool = list(first.index[rng.permutation(len(first))]) + stratified_fill(later, rng)
    chosen += pool[:len(chosen)]
    picked = frame.loc[chosen]
    order = rng.permutation(len(picked))
    out, by_task = [], {}
    task_offset = {t: int(rng.integers(len(raters))) for t in sorted(set(picked["task_id"]))}
    for position, idx in enumerate(order, start=1):
        row = picked.iloc[idx]
        k = by_task.get(row["task_id"], 0)
        by_task[row["task_id"]] = k + 1
        rater = raters[(task_offset[row["task_id"]] + k) % len(raters)]
        item = "item-" + sha256_text(f"{seed}:{row['trajectory_id']}")[:12]
        out.append(Assignment(item, position, rater, row["trajectory_id"], row["task_id"], row["disposition"],
                              row["config"], int(row["v_p"]), row["degree"]))
    return out


def stratified_fill(frame: pd.DataFrame, rng: np.random.Generator) -> list:
    """The rows' index in a stratified random order: strata (disposition, configuration) shuffled, each
    shuffled within, then one row from each stratum in turn -- any prefix is spread over the strata."""
    strata = [list(part.index[rng.permutation(len(part))])
              for _, part in sorted(frame.groupby(["disposition", "config"], sort=True), key=lambda kv: kv[0])]
    strata = [strata[i] for i in rng.permutation(len(strata))]
    out = []
    while any(strata):
        for s in strata:
            if s:
                out.append(s.pop(0))
    return out


def by_degree(assignments: dict[str, "Assignment"], ratings: list["Rating"]) -> pd.DataFrame:
    """Seed 004 H.3 by the judge's degree (none / minor / clear): mean satisfaction, share accepted as is,
    and unnecessary steps marked per record, with the number of ratings."""
    rows = [{"degree": assignments[r.item_id].degree or "none", "v_p": assignments[r.item_id].v_p,
             "satisfaction": r.satisfaction, "accept_as_is": r.accept_as_is,
             "unnecessary_steps": len(r.unnecessary_steps)} for r in ratings]
    frame = pd.DataFrame(rows, columns=["degree", "v_p", "satisfaction", "accept_as_is", "unnecessary_steps"])
    if frame.empty:
        return pd.DataFrame(columns=["degree", "ratings", "satisfaction", "accept_as_is", "unnecessary_steps",
                                     "any_unnecessary"])
    frame["any_unnecessary"] = frame["unnecessary_steps"] > 0
    out = frame.groupby("degree").agg(ratings=("satisfaction", "size"), satisfaction=("satisfaction", "mean"),
                                      accept_as_is=("accept_as_is", "mean"),
                                      unnecessary_steps=("unnecessary_steps", "mean"),
                                      any_unnecessary=("any_unnecessary", "mean"))
    order = [d for d in ("none", "minor", "clear") if d in out.index] + [d for d in out.index
                                                                        if d not in ("none", "minor", "clear")]
    return out.loc[order].reset_index()


def sheet_rows(assignments: list[Assignment], trajectories: dict[str, Trajectory]) -> list[dict]:
    """What raters see: the structured record, blinded (no configuration, judge label or condition)."""
    rows = []
    for a in assignments:
        t = trajectories[a.trajectory_id]
        rows.append({"item_id": a.item_id, "order": a.order, "rater": a.rater, "scenario": SCENARIO,
                     "task": t.task_description, "instruction": t.instruction, "defining_evidence": t.evidence,
                     "actions": [{"step": i + 1, **act.model_dump(exclude_none=True)} for i, act in enumerate(t.actions)],
                     "runtime_seconds": t.resources.runtime_seconds, "workspace_diff": t.workspace_diff,
                     "oracle": t.oracle.model_dump(), "final_response": t.final_response, "question": QUESTION,
                     "satisfaction": None, "accept_as_is": None, "unnecessary_steps": []})
    return rows


def write_study(out_dir: str | Path, assignments: list[Assignment], trajectories: dict[str, Trajectory],
                seed: int) -> tuple[Path, Path]:
    """sheet.jsonl for raters; key.jsonl (item -> trajectory, configuration, judge label) for the study lead.
    Written to temp files and renamed."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    sheet, key = out / "sheet.jsonl", out / "key.jsonl"
    for path, rows in ((sheet, sheet_rows(assignments, trajectories)),
                       (key, [{**a.__dict__, "seed": seed} for a in assignments])):
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        tmp.replace(path)
    return sheet, key


class Rating(BaseModel):
    """One line of the sheet ``study sample`` wrote, with the rater's answers filled in: satisfaction
    (1-5), accept_as_is (true/false) and unnecessary_steps (step numbers). The record's presentation
    fields may stay in the line (they are ignored); any other field is an error (a typo, not a rating).
    A line whose satisfaction and accept_as_is are both still null is not rated yet."""
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    item_id: str = Field(min_length=1)
    rater: str = Field(min_length=1)
    satisfaction: int | None = Field(ge=1, le=5)
    accept_as_is: bool | None
    unnecessary_steps: list[int] = []
    # what the sheet shows the rater (sheet_rows); not part of the rating
    order: Any = None
    scenario: Any = None
    task: Any = None
    instruction: Any = None
    defining_evidence: Any = None
    actions: Any = None
    runtime_seconds: Any = None
    workspace_diff: Any = None
    oracle: Any = None
    final_response: Any = None
    question: Any = None

    @property
    def rated(self) -> bool:
        return self.satisfaction is not None or self.accept_as_is is not None


def import_ratings(path: str | Path, key: dict[str, Assignment], steps: dict[str, int]) -> Loaded[Rating]:
    """Validate ratings against the key: known item, the assigned rater, step numbers that exist. Errors
    name file, line and field; a second rating of the same item is an error too."""
    loaded = load_jsonl(path, Rating, key="item_id")
    kept, errors = [], list(loaded.errors)
    for line, r in loaded.records:
        a = key.get(r.item_id)
        if not r.rated:
            continue  # a sheet line not rated yet: neither a rating nor an error
        missing = [f for f in ("satisfaction", "accept_as_is") if getattr(r, f) is None]
        if missing:
            errors.append(RecordError(loaded.source, line, missing[0], "not filled in (the other answer is)"))
        elif a is None:
            errors.append(RecordError(loaded.source, line, "item_id", f"unknown item {r.item_id!r}"))
        elif r.rater != a.rater:
            errors.append(RecordError(loaded.source, line, "rater", f"item {r.item_id} was assigned to {a.rater!r}"))
        elif any(not 1 <= s <= steps[a.trajectory_id] for s in r.unnecessary_steps):
            errors.append(RecordError(loaded.source, line, "unnecessary_steps",
                                      f"steps are 1..{steps[a.trajectory_id]} for this record"))
        else:
            kept.append((line, r))
    return Loaded(loaded.source, kept, sorted(errors, key=lambda e: e.line))
