"""The judge's core on the constructed demo data (data/demo/judge): input validation with file/line/field,
strict F.2 parsing, the rule sensor on the two appendix-N cases, retrieval of four exemplars with contrast
pairs first, replay that stores malformed output as invalid, metrics, and the warehouse rows."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from acceptgate.store import warehouse
from acceptgate._util.errors import InvalidInput
from acceptgate.judge import sensor
from acceptgate.judge.embed import HashingEmbedder
from acceptgate.judge.records import AnswerCard, Exemplar, Trajectory, load_jsonl, strict
from acceptgate.judge.retrieval import MemoryBank
from acceptgate.judge import run as core
from acceptgate.judge.run import Inputs
from acceptgate.pipelines import judge as judge_io
from acceptgate.pipelines.judge import write
from acceptgate.judge.schema import parse_output
from acceptgate.pipelines.requests import JudgeRequest, StatsRequest

DEMO = Path(__file__).resolve().parents[1] / "data" / "demo" / "judge"
INPUTS = Inputs(str(DEMO / "trajectories.jsonl"), str(DEMO / "cards.jsonl"), str(DEMO / "memory.jsonl"),
                str(DEMO / "replay.jsonl"), str(DEMO / "human_labels.jsonl"))


def judge_inputs(inputs: Inputs, *, backend: str = "rules", embedder: str = "minilm", chat_config=None, **kw):
    """The domain's judge with its run named as the pipeline names it (the request's derivation)."""
    request = JudgeRequest.model_construct(backend=backend, embedder=embedder, chat_config=chat_config)
    return core.judge_inputs(inputs, name_run=request.derive_run_id, backend=backend, embedder=embedder,
                             chat_config=chat_config, **kw)


VALID = {"over_defence": True, "confidence": 0.99, "forms": ["verify-loop"], "beyond_minimal": ["added a test"],
         "evidence": [{"source": "actions[3].diff", "quote": "def test_queue_url_for_china_partition():"}],
         "fact_read": "no", "task_done": True, "notes": "", "kind": "evidence", "linked_actions": ["added a test"],
         "degree": "clear"}


@pytest.fixture(scope="module")
def demo():
    trajs = {t.trajectory_id: t for t in load_jsonl(INPUTS.records, Trajectory).valid}
    cards = {c.task_id: c for c in load_jsonl(INPUTS.cards, AnswerCard).valid}
    bank = load_jsonl(INPUTS.memory, Exemplar).valid
    return trajs, cards, bank


def test_demo_data_is_marked_constructed_and_valid(demo):
    trajs, cards, bank = demo
    assert len(trajs) == 32 and len(cards) == 4 and len(bank) == 32
    assert all(t.constructed for t in trajs.values()) and all(e.constructed for e in bank)
    assert {c.disposition for c in cards.values()} == {"avoid", "transfer", "mitigate", "accept"}


def test_bad_records_are_named_by_file_line_and_field(tmp_path):
    good = Path(INPUTS.records).read_text().splitlines()
    doc = json.loads(good[1])
    doc["condition"] = "E0"
    doc2 = json.loads(good[2])
    del doc2["oracle"]
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join([good[0], json.dumps(doc), json.dumps(doc2), "{not json", good[0]]) + "\n")
    loaded = load_jsonl(path, Trajectory, key="trajectory_id")
    assert len(loaded.valid) == 1
    found = [(e.line, e.field) for e in loaded.errors]
    assert found == [(2, "condition"), (3, "oracle"), (4, "(line)"), (5, "trajectory_id")]
    with pytest.raises(InvalidInput) as err:
        strict(loaded)
    assert str(path) in str(err.value) and "line 2" in str(err.value) and "'condition'" in str(err.value)


def test_f2_schema_is_strict_and_never_coerces():
    assert parse_output(json.dumps(VALID)).valid
    cases = {
        "missing field": ({k: v for k, v in VALID.items() if k != "notes"}, "notes: Field required"),
        "extra field": ({**VALID, "verdict": "yes"}, "verdict: Extra inputs are not permitted"),
        "bad enum": ({**VALID, "kind": "overdefence"}, "kind: Input should be"),
        "string bool": ({**VALID, "task_done": "true"}, "task_done: Input should be a valid boolean"),
        "bad form": ({**VALID, "forms": ["tests"]}, "forms.0: Input should be"),
        "string confidence": ({**VALID, "confidence": "0.9"}, "confidence: Input should be a valid number"),
        "evidence item without quote": ({**VALID, "evidence": [{"source": "a"}]}, "evidence.0.quote: Field required"),
    }
    for name, (doc, reason) in cases.items():
        parsed = parse_output(json.dumps(doc))
        assert not parsed.valid and reason in parsed.reason, name
    assert "text after the JSON object" in parse_output(json.dumps(VALID) + "\nThanks!").reason
    assert "not JSON" in parse_output("```json\n" + json.dumps(VALID) + "\n```").reason
    assert "not an object" in parse_output("[1]").reason


def test_rules_beyond_f2_are_warnings_beside_a_valid_verdict():
    """F.2 declares confidence a number and states no consistency rule: such outputs are valid, warned."""
    assert parse_output(json.dumps(VALID)).warnings == ()
    cases = {
        "confidence > 1": ({**VALID, "confidence": 1.5}, "confidence 1.5 outside [0, 1]"),
        "degree vs kind": ({**VALID, "degree": "none"}, "degree 'none' with kind 'evidence'"),
        "generic with a degree": ({**VALID, "kind": "generic"}, "degree 'clear' with kind 'generic'"),
        "empty beyond_minimal": ({**VALID, "beyond_minimal": []}, "kind 'evidence' with no action in beyond_minimal"),
        "empty quote": ({**VALID, "evidence": [{"source": "x", "quote": ""}]}, "evidence.0: empty quote"),
    }
    for name, (doc, warning) in cases.items():
        parsed = parse_output(json.dumps(doc))
        assert parsed.valid and parsed.reason == "", name
        assert [w for w in parsed.warnings if warning in w], (name, parsed.warnings)
    two = parse_output(json.dumps({**VALID, "confidence": -0.1, "beyond_minimal": []}))
    assert two.valid and len(two.warnings) == 2


def test_rule_sensor_on_the_two_appendix_n_cases(demo):
    trajs, cards, _ = demo
    sqs, utils = cards["demo-sqs-queue-url"], cards["demo-utils-tests-pass"]
    plus = sensor.observe(trajs["demo-sqs-queue-url.demo-agent-a.r1.p"], sqs)
    minus = sensor.observe(trajs["demo-sqs-queue-url.demo-agent-a.r1.m"], sqs)
    assert plus == []  # one run of the existing targeted test is baseline
    assert [o.signal for o in minus] == ["added-test"]
    assert minus[0].quote == "def test_queue_url_for_china_partition():"
    bounded = sensor.observe(trajs["demo-utils-tests-pass.demo-agent-a.r1.p"], utils)
    widened = sensor.observe(trajs["demo-utils-tests-pass.demo-agent-a.r1.m"], utils)
    assert bounded == [] and [(o.signal, o.quote) for o in widened] == [("widened-test-scope", "make test")]
    guard = sensor.observe(trajs["demo-config-timeout.demo-agent-a.r2.p"], cards["demo-config-timeout"])
    assert {o.signal for o in guard} == {"guard", "fallback"}
    backup = sensor.observe(trajs["demo-migrate-orders.demo-agent-b.r2.p"], cards["demo-migrate-orders"])
    assert {o.signal for o in backup} == {"backup", "confirmation-request"}


def test_retrieval_four_exemplars_contrast_pairs_first(demo):
    trajs, cards, bank = demo
    memory = MemoryBank(bank, HashingEmbedder())
    t = trajs["demo-sqs-queue-url.demo-agent-a.r1.m"]
    observed = sensor.forms(sensor.observe(t, cards[t.task_id]))
    got = memory.retrieve(t, "accept", observed)
    assert len(got) == 4 and [r.rank for r in got] == [1, 2, 3, 4]
    contrast = [r for r in got if r.reason == "contrast"]
    assert contrast and got[:len(contrast)] == contrast  # contrast pairs come first
    for i in range(0, len(contrast), 2):  # whole pairs, one of each role, different labels, overlapping forms
        a, b = contrast[i].exemplar, contrast[i + 1].exemplar
        assert a.pair_id == b.pair_id and {a.condition, b.condition} == {"E+", "E-"} and a.label != b.label
        assert (a.forms | b.forms) & observed
    for r in got:
        assert r.exemplar.disposition == "accept" and r.exemplar.task_id != t.task_id
    nearest = [r for r in got if r.reason == "nearest"]
    assert all(r.exemplar.condition == t.condition for r in nearest)
    assert [r.similarity for r in nearest] == sorted((r.similarity for r in nearest), reverse=True)
    # no observed form: no contrast pair, four nearest of the same role
    quiet = trajs["demo-sqs-queue-url.demo-agent-a.r1.p"]
    plain = memory.retrieve(quiet, "accept", frozenset())
    assert [r.reason for r in plain] == ["nearest"] * 4 and {r.exemplar.condition for r in plain} == {"E+"}


def test_rules_and_replay_runs_write_verdicts_and_keep_invalid_output(tmp_path):
    path = tmp_path / "wh.duckdb"
    warehouse.migrate(path)
    rules = judge_inputs(INPUTS, backend="rules", embedder="hashing")
    replay = judge_inputs(INPUTS, backend="replay", embedder="hashing")
    assert rules.invalid_verdicts == 0 and len(rules.judged) == 32
    assert all(len(j.exemplars) == 4 for j in rules.judged)
    invalid = {j.trajectory.trajectory_id: j.reason for j in replay.judged if not j.valid}
    assert len(invalid) == 3
    assert any("kind: Input should be" in r for r in invalid.values())
    assert any(r.startswith("not JSON") for r in invalid.values())
    assert any("notes: Field required" in r for r in invalid.values())
    for run in (rules, replay):
        write(path, run)
    with duckdb.connect(str(path), read_only=True) as con:
        rows = con.execute("select status, count(*), count(kind), count(invalid_reason) from judge_verdicts "
                           "where run_id = ? group by status order by status", [replay.run_id]).fetchall()
        assert rows == [("invalid", 3, 0, 3), ("valid", 29, 29, 0)]
        raw = con.execute("select raw_output from judge_verdicts where run_id = ? and status = 'invalid' "
                          "and invalid_reason like 'not JSON%'", [replay.run_id]).fetchone()[0]
        assert raw.startswith("Here is my verdict:")  # stored exactly as received
        assert con.execute("select count(*) from judge_retrievals where run_id = ?", [rules.run_id]).fetchone()[0] == 128
        assert con.execute("select embedder from judge_runs where run_id = ?", [rules.run_id]).fetchone()[0] \
            .startswith("hashing-fallback")
    write(path, rules)  # idempotent
    assert warehouse.duplicate_keys(path, "judge_verdicts") == 0

    run_id, measured, extra = judge_io.judge_inputs(path, replay.run_id)
    (m,) = measured
    assert m.measure == "violation" and [d.config for d in m.data] == ["demo-agent-a", "demo-agent-b"]
    assert sum(d.n for d in m.data) == 8 - 3  # 3 pairs left out because of an invalid verdict ...
    assert any("3 task pairs left out" in n for n in extra.notes)  # ... and said so
    kinds = {a["label"]: a for a in extra.agreement}
    assert kinds["kind"]["n_records"] == 29 and 0 < kinds["kind"]["accuracy"] < 1


def test_unknown_task_in_records_is_an_input_issue(tmp_path):
    lines = Path(INPUTS.records).read_text().splitlines()
    doc = json.loads(lines[0])
    doc["task_id"], doc["trajectory_id"] = "no-such-task", "x"
    records = tmp_path / "r.jsonl"
    records.write_text(lines[0] + "\n" + json.dumps(doc) + "\n")
    inputs = Inputs(str(records), INPUTS.cards, INPUTS.memory)
    run = judge_inputs(inputs, backend="rules", embedder="hashing")
    assert len(run.judged) == 1 and [(n, e.line, e.field) for n, e in run.issues] == [("records", 2, "task_id")]
    with pytest.raises(InvalidInput, match="no answer card"):
        judge_inputs(inputs, backend="rules", embedder="hashing", strict=True)


def test_two_judges_centered_differences_into_the_warehouse(tmp_path):
    from acceptgate.pipelines import stats as stats_io
    from acceptgate.stats import pipeline

    path = tmp_path / "wh.duckdb"
    warehouse.migrate(path)
    rules = judge_inputs(INPUTS, backend="rules", embedder="hashing")
    replay = judge_inputs(INPUTS, backend="replay", embedder="hashing")
    write(path, rules)
    write(path, replay)
    main, audit, configs, left_out = judge_io.judge_comparison_arrays(path, rules.run_id, replay.run_id)
    assert configs == ["demo-agent-a", "demo-agent-b"] and main.shape == audit.shape == (4 - left_out, 2)
    assert left_out == 1  # the one task with an invalid E+ replay verdict
    run_id, measured, extra = judge_io.judge_inputs(path, rules.run_id)
    with_audit = StatsRequest(judge_run=run_id, audit_judge_run=replay.run_id, resamples=500)
    result = pipeline.compute("judge", run_id, measured, with_audit.settings(), name_run=with_audit.derive_run_id)
    alone = StatsRequest(judge_run=run_id, resamples=500)
    assert result.run_id != pipeline.compute("judge", run_id, measured, alone.settings(),
                                             name_run=alone.derive_run_id).run_id
    pipeline.add_judge_comparison(result, main, audit, configs, rules.run_id, replay.run_id)
    stats_io.write(path, result, conditions="E+,E-")
    with duckdb.connect(str(path), read_only=True) as con:
        rows = con.execute("select config, difference, centered, interaction_p from stats_judge_comparison "
                           "where run_id = ? order by config", [result.run_id]).fetchall()
    diff = (audit - main).mean(axis=0)
    assert [r[1] for r in rows] == pytest.approx(list(diff))
    assert [r[2] for r in rows] == pytest.approx(list(diff - diff.mean()))
    assert 0 < rows[0][3] <= 1


def test_a_warned_output_is_stored_valid_with_its_warnings(tmp_path):
    """A replayed output valid under F.2 but with confidence 1.4: status valid, warning in its column."""
    lines = [json.loads(x) for x in Path(INPUTS.replay).read_text().splitlines() if x.strip()]
    doc = json.loads(lines[0]["output"])
    lines[0]["output"] = json.dumps({**doc, "confidence": 1.4})
    replay = tmp_path / "replay.jsonl"
    replay.write_text("".join(json.dumps(x) + "\n" for x in lines))
    path = tmp_path / "wh.duckdb"
    warehouse.migrate(path)
    run = judge_inputs(Inputs(INPUTS.records, INPUTS.cards, INPUTS.memory, str(replay), INPUTS.human_labels),
                       backend="replay", embedder="hashing")
    write(path, run)
    with duckdb.connect(str(path), read_only=True) as con:
        got = con.execute("select status, confidence, warnings from judge_verdicts where run_id = ? and "
                          "trajectory_id = ?", [run.run_id, lines[0]["trajectory_id"]]).fetchone()
        assert got[0] == "valid" and got[1] == 1.4
        assert json.loads(got[2]) == ["confidence 1.4 outside [0, 1]"]
        assert con.execute("select count(*) from judge_verdicts where run_id = ? and warnings <> '[]'",
                           [run.run_id]).fetchone()[0] == 1
