"""A judge run: records + cards + memory bank -> sensor -> retrieval -> prompt -> backend -> F.2
validation -> verdict rows for the warehouse.

Invalid input records (the lead's rule): with ``strict`` the first one refuses everything (exit 2,
nothing written); otherwise each is reported with file, line and field, counted as ``invalid`` in the
summary and stored in judge_input_issues, never dropped silently. Invalid judge *outputs* are verdict
rows with status 'invalid' and the reason; they are never coerced into a label.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable

import pandas as pd

from acceptgate import __version__

from acceptgate._util.errors import InvalidInput
from acceptgate._util.hashing import sha256_file, sha256_text
from acceptgate.judge import sensor
from acceptgate.judge.prompt import assemble
from acceptgate.judge.records import (
    AnswerCard, Exemplar, HumanLabel, Loaded, RecordError, Trajectory, load_jsonl, strict as refuse_invalid,
)
from acceptgate.judge.retrieval import MemoryBank, Retrieved
from acceptgate.judge.schema import parse_output

VERDICT_COLUMNS = ["run_id", "trajectory_id", "task_id", "pair_id", "config", "run", "condition", "disposition",
                   "status", "invalid_reason", "raw_output", "prompt_sha256", "record_sha256", "over_defence",
                   "confidence", "forms", "beyond_minimal", "evidence", "fact_read", "task_done", "notes", "kind",
                   "linked_actions", "degree", "v_p", "oracle_passed", "tokens_in", "tokens_out",
                   "runtime_seconds", "judge_tokens_in", "judge_tokens_out", "constructed", "warnings"]
RETRIEVAL_COLUMNS = ["run_id", "trajectory_id", "rank", "exemplar_id", "reason", "similarity", "exemplar_task_id",
                     "exemplar_condition", "exemplar_label"]
OBSERVATION_COLUMNS = ["run_id", "trajectory_id", "seq", "signal", "form", "source", "quote"]
ISSUE_COLUMNS = ["run_id", "input", "source", "line", "field", "message"]
LABEL_COLUMNS = ["run_id", "trajectory_id", "kind"]
RUN_COLUMNS = ["run_id", "backend", "embedder", "records_sha256", "cards_sha256", "memory_sha256", "replay_sha256",
               "labels_sha256", "trajectories", "valid_verdicts", "invalid_verdicts", "invalid_records",
               "acceptgate_version"]


@dataclass(frozen=True)
class Inputs:
    records: str
    cards: str
    memory: str
    replay: str | None = None
    human_labels: str | None = None


@dataclass
class Judged:
    trajectory: Trajectory
    card: AnswerCard
    observations: list
    exemplars: list[Retrieved]
    prompt_sha256: str
    raw: str
    valid: bool
    reason: str
    output: object | None
    judge_tokens: tuple[int, int]
    warnings: tuple[str, ...] = ()  # rules beyond F.2 that a valid output breaks (judge.schema)


@dataclass
class JudgeRun:
    run_id: str
    backend: str
    embedder: str
    hashes: dict[str, str | None]
    judged: list[Judged] = field(default_factory=list)
    issues: list[tuple[str, RecordError]] = field(default_factory=list)  # (input name, error)
    labels: list[HumanLabel] = field(default_factory=list)

    @property
    def invalid_verdicts(self) -> int:
        return sum(not j.valid for j in self.judged)

    def frames(self) -> dict[str, pd.DataFrame]:
        verdicts, retrievals, observations = [], [], []
        for j in self.judged:
            t, o = j.trajectory, j.output
            row = {"run_id": self.run_id, "trajectory_id": t.trajectory_id, "task_id": t.task_id,
                   "pair_id": t.pair_id, "config": t.config, "run": t.run, "condition": t.condition,
                   "disposition": j.card.disposition, "status": "valid" if j.valid else "invalid",
                   "invalid_reason": j.reason or None, "raw_output": j.raw, "prompt_sha256": j.prompt_sha256,
                   "record_sha256": sha256_text(t.model_dump_json()), "oracle_passed": t.oracle.passed,
                   "tokens_in": t.resources.tokens_in, "tokens_out": t.resources.tokens_out,
                   "runtime_seconds": t.resources.runtime_seconds, "judge_tokens_in": j.judge_tokens[0],
                   "judge_tokens_out": j.judge_tokens[1], "constructed": t.constructed,
                   "warnings": json.dumps(list(j.warnings))}
            if o is not None:
                row.update(over_defence=o.over_defence, confidence=o.confidence, forms=json.dumps(o.forms),
                           beyond_minimal=json.dumps(o.beyond_minimal),
                           evidence=json.dumps([e.model_dump() for e in o.evidence]), fact_read=o.fact_read,
                           task_done=o.task_done, notes=o.notes, kind=o.kind,
                           linked_actions=json.dumps(o.linked_actions), degree=o.degree, v_p=o.v_p)
            verdicts.append(row)
            retrievals += [{"run_id": self.run_id, "trajectory_id": t.trajectory_id, "rank": r.rank,
                            "exemplar_id": r.exemplar.exemplar_id, "reason": r.reason,
                            "similarity": round(r.similarity, 6), "exemplar_task_id": r.exemplar.task_id,
                            "exemplar_condition": r.exemplar.condition, "exemplar_label": r.exemplar.label}
                           for r in j.exemplars]
            observations += [{"run_id": self.run_id, "trajectory_id": t.trajectory_id, "seq": k, "signal": ob.signal,
                              "form": ob.form, "source": ob.source, "quote": ob.quote}
                             for k, ob in enumerate(j.observations, start=1)]
        frame = pd.DataFrame(verdicts, columns=VERDICT_COLUMNS)
        for col in ("over_defence", "task_done"):
            frame[col] = frame[col].astype("boolean")
        frame["v_p"] = frame["v_p"].astype("Int64")
        frame["confidence"] = frame["confidence"].astype("Float64")
        issues = [{"run_id": self.run_id, "input": name, "source": e.source, "line": e.line, "field": e.field,
                   "message": e.message} for name, e in self.issues]
        labels = [{"run_id": self.run_id, "trajectory_id": h.trajectory_id, "kind": h.kind} for h in self.labels]
        return {"judge_verdicts": frame,
                "judge_retrievals": pd.DataFrame(retrievals, columns=RETRIEVAL_COLUMNS),
                "judge_observations": pd.DataFrame(observations, columns=OBSERVATION_COLUMNS),
                "judge_input_issues": pd.DataFrame(issues, columns=ISSUE_COLUMNS),
                "judge_human_labels": pd.DataFrame(labels, columns=LABEL_COLUMNS)}

    def run_frame(self) -> pd.DataFrame:
        return pd.DataFrame([{"run_id": self.run_id, "backend": self.backend, "embedder": self.embedder,
                              **{f"{k}_sha256": v for k, v in self.hashes.items()},
                              "trajectories": len(self.judged), "valid_verdicts": len(self.judged) - self.invalid_verdicts,
                              "invalid_verdicts": self.invalid_verdicts, "invalid_records": len(self.issues),
                              "acceptgate_version": __version__}], columns=RUN_COLUMNS)


def _file_sha(path: str | None) -> str | None:
    if path is None:
        return None
    try:
        return sha256_file(path)
    except OSError as exc:
        raise InvalidInput(f"cannot read: {exc.strerror}", source=path) from None


def _load(path: str, model, key: str, strict: bool, name: str, issues: list) -> Loaded:
    loaded = load_jsonl(path, model, key=key)
    if strict:
        refuse_invalid(loaded)
    issues += [(name, e) for e in loaded.errors]
    return loaded


def prepare(inputs: Inputs, *, strict: bool = False) -> tuple[list[Trajectory], dict[str, AnswerCard],
                                                             list[Exemplar], list[HumanLabel], list]:
    """Load and cross-check every input; a trajectory whose task has no card is an input issue."""
    issues: list[tuple[str, RecordError]] = []
    records = _load(inputs.records, Trajectory, "trajectory_id", strict, "records", issues)
    cards = _load(inputs.cards, AnswerCard, "task_id", strict, "cards", issues)
    memory = _load(inputs.memory, Exemplar, "exemplar_id", strict, "memory", issues)
    labels = _load(inputs.human_labels, HumanLabel, "trajectory_id", strict, "human_labels", issues) \
        if inputs.human_labels else None
    by_task = {c.task_id: c for c in cards.valid}
    kept = []
    for line, t in records.records:
        if t.task_id not in by_task:
            err = RecordError(records.source, line, "task_id", f"no answer card for task {t.task_id!r}")
            if strict:
                raise InvalidInput(err.message, source=err.source, record=f"line {line}", field="task_id")
            issues.append(("records", err))
            continue
        kept.append(t)
    return kept, by_task, memory.valid, labels.valid if labels else [], issues


def input_hashes(inputs: Inputs) -> dict[str, str | None]:
    """Each input file's content hash (None: not given), as the run's row records them."""
    return {"records": _file_sha(inputs.records), "cards": _file_sha(inputs.cards),
            "memory": _file_sha(inputs.memory), "replay": _file_sha(inputs.replay),
            "labels": _file_sha(inputs.human_labels)}


def judge_all(trajectories: list[Trajectory], cards: dict[str, AnswerCard], bank: MemoryBank, backend,
              progress=None) -> list[Judged]:
    out = []
    for i, t in enumerate(trajectories, start=1):
        card = cards[t.task_id]
        obs = sensor.observe(t, card)
        exemplars = bank.retrieve(t, card.disposition, sensor.forms(obs))
        prompt = assemble(t, card, exemplars, obs)
        raw = backend.judge(t, card, obs, prompt)
        if raw.error:
            parsed_ok, reason, output, warnings = False, f"backend: {raw.error}", None, ()
        else:
            parsed = parse_output(raw.text)
            parsed_ok, reason, output, warnings = parsed.valid, parsed.reason, parsed.output, parsed.warnings
        out.append(Judged(t, card, obs, exemplars, prompt.sha256, raw.text, parsed_ok, reason, output,
                          (raw.tokens_in, raw.tokens_out), warnings))
        if progress:
            progress(i, len(trajectories))
    return out


def summary_lines(run: JudgeRun, *, show_exemplars: bool = True) -> list[str]:
    out = [f"judge run {run.run_id}: backend {run.backend}, embedder {run.embedder}; {len(run.judged)} trajectories, "
           f"{len(run.judged) - run.invalid_verdicts} valid verdicts, {run.invalid_verdicts} invalid, "
           f"{len(run.issues)} invalid input records"]
    for name, e in run.issues:
        out.append(f"  invalid {name} input: {e}")
    for j in run.judged:
        t = j.trajectory
        verdict = (f"kind={j.output.kind} degree={j.output.degree} confidence={j.output.confidence:g}"
                   if j.valid else f"INVALID ({j.reason})")
        out.append(f"{t.trajectory_id} [{t.config} run {t.run} {t.condition} {j.card.disposition}]: {verdict}")
        if show_exemplars:
            for r in j.exemplars:
                e = r.exemplar
                out.append(f"    exemplar {r.rank}: {e.exemplar_id} ({r.reason}, {e.condition}, human label "
                           f"{e.label}, cosine {r.similarity:.3f})")
    return out


def judge_inputs(inputs: Inputs, *, name_run: Callable[[dict[str, str | None]], str], backend: str = "rules",
                 embedder: str = "minilm", strict: bool = False, chat_config=None,
                 on_run_id: Callable[[str], object] | None = None) -> JudgeRun:
    """Load, judge every valid trajectory, and return the run (nothing written yet). ``name_run(input
    hashes)``: the run id (``JudgeRequest.derive_run_id``, which also hashes the backend and encoder).
    ``on_run_id`` is called with the run id once it is known, before any trajectory is judged (the
    pipeline records its attempt there)."""
    from acceptgate.judge import backends, embed

    trajectories, cards, exemplars, labels, issues = prepare(inputs, strict=strict)
    judge = backends.create(backend, replay_path=inputs.replay, chat_config=chat_config, strict=strict)
    try:
        encoder = embed.get(embedder)
        hashes = input_hashes(inputs)
        run_id = name_run(hashes)
        run = JudgeRun(run_id, judge.name, encoder.name, hashes, issues=issues, labels=labels)
        run.issues += [("replay", e) for e in getattr(judge, "errors", [])]
        if on_run_id is not None:
            on_run_id(run_id)
        run.judged = judge_all(trajectories, cards, MemoryBank(exemplars, encoder), judge)
    finally:
        judge.close()
    return run
