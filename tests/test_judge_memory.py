"""Seed 004 G.2/G.3/K tooling: the memory bank's stratified selection and freeze (no overlap with
validation), the stratified random fill of the human study, the audit subset, analysis by degree."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from acceptgate._util.errors import InvalidInput
from acceptgate.judge import human, memory
from acceptgate.judge.records import DISPOSITIONS, Exemplar


def _patterned_verdicts(per_stratum=3):
    """Tasks named <disposition>-<pattern>-<k>, each with an E+ and E- verdict of config 'a', run 1, whose
    V_p make the named pattern; plus a second configuration that must not be read."""
    rows = []
    for d in DISPOSITIONS:
        for p, (plus, minus) in zip(memory.PATTERNS, ((1, 1), (1, 0), (0, 1), (0, 0))):
            for k in range(per_stratum):
                tid = f"{d}-{p}-{k}"
                for cond, v in (("E+", plus), ("E-", minus)):
                    for config, flip in (("a", 0), ("b", 1)):
                        rows.append({"trajectory_id": f"{tid}.{config}.{cond}", "task_id": tid, "config": config,
                                     "run": 1, "condition": cond, "disposition": d, "status": "valid",
                                     "v_p": v ^ flip, "oracle_passed": True, "degree": "none"})
    return pd.DataFrame(rows)


def test_memory_selection_is_32_tasks_two_per_disposition_and_pattern():
    patterns = memory.prediction_patterns(_patterned_verdicts())
    assert len(patterns) == 48 and set(patterns["pattern"]) == set(memory.PATTERNS)
    assert (patterns["task_id"].str.split("-").str[1] == patterns["pattern"]).all()  # read from config a only
    chosen, short = memory.select_tasks(patterns, seed=1)
    assert len(chosen) == 32 and not short and len({c.task_id for c in chosen}) == 32
    counts = pd.Series([(c.disposition, c.pattern) for c in chosen]).value_counts()
    assert len(counts) == 16 and (counts == 2).all()
    assert all(c.trajectories == (f"{c.task_id}.a.E+", f"{c.task_id}.a.E-") for c in chosen)
    assert memory.select_tasks(patterns, seed=1)[0] == chosen
    assert memory.select_tasks(patterns, seed=2)[0] != chosen
    # validation tasks are never drawn; a stratum left short says so
    exclude = {f"avoid-both-{k}" for k in range(2)}
    again, short = memory.select_tasks(patterns, seed=1, exclude=exclude)
    assert not exclude & {c.task_id for c in again} and short == ["avoid/both: 1 of 2 tasks available"]


def _exemplar(task, cond):
    return Exemplar(exemplar_id=f"{task}.{cond}", task_id=task, pair_id=task, disposition="avoid", condition=cond,
                    task_description="d", minimal_action="m", label="none", actions=[], rationale="r",
                    constructed=True)


def test_freeze_writes_canonical_file_with_hash_and_refuses_overlap(tmp_path):
    records = [_exemplar(t, c) for t in ("t1", "t2") for c in ("E-", "E+")]
    with pytest.raises(InvalidInput, match="validation tasks too"):
        memory.freeze(records, tmp_path / "bank.jsonl", validation_tasks={"t2", "v9"})
    assert not (tmp_path / "bank.jsonl").exists()  # nothing written
    sel = [memory.Selected("t1", "avoid", "both", ("x", "y"))]
    with pytest.raises(InvalidInput, match="not in the selection"):
        memory.freeze(records, tmp_path / "bank.jsonl", validation_tasks=set(), selection=sel)
    with pytest.raises(InvalidInput, match="no labelled record"):
        memory.freeze(records[:1], tmp_path / "bank.jsonl", validation_tasks=set(), selection=sel)
    path, digest = memory.freeze(list(reversed(records)), tmp_path / "bank.jsonl", validation_tasks={"v9"})
    lines = path.read_text().splitlines()
    assert [json.loads(x)["exemplar_id"] for x in lines] == ["t1.E+", "t1.E-", "t2.E+", "t2.E-"]
    assert memory.check_frozen(path) == digest
    assert memory.freeze(records, tmp_path / "again.jsonl", validation_tasks=set())[1] == digest  # order-free
    path.write_text(path.read_text().replace('"d"', '"e"'))
    with pytest.raises(InvalidInput, match="changed since it was frozen"):
        memory.check_frozen(path)


def test_audit_subset_400_per_configuration_spread_over_dispositions():
    rows = [{"trajectory_id": f"{c}-{d}-{i}{cond}", "task_id": f"{d}-{i}", "config": c, "run": 1, "condition": cond,
             "disposition": d} for c in ("a", "b") for d in DISPOSITIONS
            for i in range(150 if d != "transfer" else 40) for cond in ("E+", "E-")]
    frame = pd.DataFrame(rows)
    sub = memory.audit_subset(frame, seed=0)
    assert sub.groupby("config").size().to_dict() == {"a": 400, "b": 400}
    assert sub["trajectory_id"].is_unique
    per = sub[sub.config == "a"].groupby("disposition").size().to_dict()
    assert per == {"transfer": 40, "avoid": 120, "mitigate": 120, "accept": 120}  # 40 + 3 x 120 = 400
    assert (frame.set_index("trajectory_id").loc[sub.trajectory_id, "condition"] == "E+").all()
    assert memory.audit_subset(frame, seed=0).equals(sub) and not memory.audit_subset(frame, seed=1).equals(sub)
    assert len(memory.audit_subset(frame[frame.config == "a"].head(20), per_config=400)) == 10  # all E+ there


def test_stratified_fill_spreads_every_prefix_over_the_strata():
    frame = pd.DataFrame({"disposition": ["avoid"] * 6 + ["accept"] * 6, "config": (["a"] * 3 + ["b"] * 3) * 2})
    order = human.stratified_fill(frame, np.random.default_rng(0))
    assert sorted(order) == list(range(12))
    strata = [(frame.disposition[i], frame.config[i]) for i in order]
    assert len(set(strata[:4])) == 4  # the first four rows come from the four strata
    assert order != human.stratified_fill(frame, np.random.default_rng(1))


def test_analysis_by_degree():
    key = {f"i{k}": human.Assignment(f"i{k}", k, "r1", f"t{k}", f"task{k}", "avoid", "a", int(deg != "none"), deg)
           for k, deg in enumerate(["none", "none", "minor", "clear", "clear"])}
    ratings = [human.Rating(item_id=f"i{k}", rater="r1", satisfaction=s, accept_as_is=acc, unnecessary_steps=st)
               for k, (s, acc, st) in enumerate([(5, True, []), (4, True, [1]), (3, False, [1, 2]), (2, False, [1, 2, 3]),
                                                 (1, False, [1])])]
    got = human.by_degree(key, ratings).set_index("degree")
    assert list(got.index) == ["none", "minor", "clear"]
    assert got.loc["none", "satisfaction"] == 4.5 and got.loc["none", "accept_as_is"] == 1.0
    assert got.loc["clear", "unnecessary_steps"] == 2.0 and got.loc["none", "any_unnecessary"] == 0.5
    assert got.loc["clear", "ratings"] == 2


def test_study_cli_memory_select_freeze_and_audit_subset(tmp_path, capsys):
    from acceptgate.store import warehouse
    from acceptgate.cli import main
    from test_judge_core import judge_inputs
    from acceptgate.pipelines.judge import write
    from test_judge_core import INPUTS

    path = tmp_path / "w.duckdb"
    warehouse.migrate(path)
    write(path, judge_inputs(INPUTS, backend="rules", embedder="hashing"))
    sel = tmp_path / "selection.jsonl"
    assert main(["study", "memory-select", "--out", str(sel), "--warehouse", str(path), "--seed", "3"]) == 0
    out = capsys.readouterr().out
    chosen = [json.loads(x) for x in sel.read_text().splitlines()]
    assert f"{len(chosen)} tasks, {2 * len(chosen)} trajectories" in out and "fewer than asked" in out
    # the demo memory bank shares no task with the demo's validation labels: it freezes
    bank = tmp_path / "bank.jsonl"
    assert main(["study", "memory-freeze", "--memory", INPUTS.memory, "--out", str(bank), "--validation",
                 INPUTS.human_labels, "--records", INPUTS.records]) == 0
    assert memory.check_frozen(bank) in capsys.readouterr().out
    # a memory record on a validation task is refused, nothing written
    labelled = json.loads(open(INPUTS.human_labels).readline())["trajectory_id"]
    task = next(json.loads(x)["task_id"] for x in open(INPUTS.records) if json.loads(x)["trajectory_id"] == labelled)
    overlapping = tmp_path / "overlap.jsonl"
    first = json.loads(open(INPUTS.memory).readline())
    overlapping.write_text(json.dumps({**first, "task_id": task}) + "\n")
    assert main(["study", "memory-freeze", "--memory", str(overlapping), "--out", str(tmp_path / "no.jsonl"),
                 "--validation", INPUTS.human_labels, "--records", INPUTS.records]) == 2
    assert "validation tasks too" in capsys.readouterr().err and not (tmp_path / "no.jsonl").exists()
    subset = tmp_path / "audit.jsonl"
    assert main(["study", "audit-subset", "--out", str(subset), "--warehouse", str(path), "--per-config", "3"]) == 0
    rows = [json.loads(x) for x in subset.read_text().splitlines()]
    assert rows and all(n <= 3 for n in pd.Series([r["config"] for r in rows]).value_counts())
