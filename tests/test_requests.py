"""acceptgate.pipelines.requests: one typed request per run kind; every check shown refusing a bad value."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from acceptgate._util.errors import InvalidInput
from acceptgate.pipelines import requests as R

# the least each kind needs
MINIMAL = {
    R.AuditRequest: {},
    R.GateRequest: {"arms": ["off"], "source": "codet:s.jsonl", "suites_dir": "suites"},
    R.CertifyRequest: {"suites_dir": "suites", "dataset": "hep.jsonl"},
    R.LeakAuditRequest: {},
    R.LeakBackfillRequest: {},
    R.StatsRequest: {},
    R.JudgeRequest: {"records": "r.jsonl", "cards": "c.jsonl", "memory": "m.jsonl"},
    R.ScoreRequest: {"suites_dir": "suites", "samples": "s.jsonl", "suite": "hidden"},
    R.NightlyRequest: {},
    R.HistoryBackfillRequest: {"run_ids": ["gate-1"]},
}


@pytest.mark.parametrize("kind", MINIMAL, ids=lambda k: k.__name__)
def test_every_request_refuses_an_unknown_field_naming_it(kind):
    assert kind(**MINIMAL[kind])  # the minimal request is valid
    with pytest.raises(InvalidInput) as err:
        R.build(kind, {**MINIMAL[kind], "limt": 3})
    assert err.value.field == "limt" and "no such parameter" in err.value.message
    assert "limt" not in kind.model_fields


@pytest.mark.parametrize("kind, field, bad", [
    (R.AuditRequest, "limit", 0),
    (R.AuditRequest, "backend", "no-such-backend"),
    (R.AuditRequest, "dataset", "no-such-data-set"),
    (R.AuditRequest, "run_id", "bad id"),
    (R.AuditRequest, "dask", "0"),
    (R.AuditRequest, "dask", "tcp://127.0.0.1:9"),  # a scheduler without TLS
    (R.AuditRequest, "shard_size", 0),
    (R.GateRequest, "arms", ["conform", "of"]),
    (R.GateRequest, "arms", []),
    (R.GateRequest, "per_task", 6),
    (R.GateRequest, "workers", 0),
    (R.GateRequest, "profile", "fast"),
    (R.GateRequest, "max_fpr_attack", 101),
    (R.GateRequest, "dataset", "no-such-data-set"),
    (R.CertifyRequest, "limit", -1),
    (R.LeakAuditRequest, "matcher", "grep"),
    (R.LeakAuditRequest, "history", "h.jsonl"),  # a list of files
    (R.LeakBackfillRequest, "batch_records", 0),
    (R.StatsRequest, "resamples", 99),
    (R.StatsRequest, "confidence", 1.0),
    (R.StatsRequest, "seed", -1),
    (R.StatsRequest, "arms", ["gated"]),
    (R.JudgeRequest, "backend", "gpt"),
    (R.JudgeRequest, "embedder", "bert"),
    (R.ScoreRequest, "suite", "secret"),
    (R.ScoreRequest, "profile", "fast"),
    (R.ScoreRequest, "workers", 0),
    (R.ScoreRequest, "backend", "no-such-backend"),
    (R.ScoreRequest, "run_id", "bad id"),
    (R.NightlyRequest, "arms", ["of"]),
    (R.NightlyRequest, "judge_embedder", "bert"),
    (R.NightlyRequest, "max_fpr_attack", -1),
    (R.HistoryBackfillRequest, "arms", ["gated"]),
])
def test_a_bad_value_is_refused_naming_its_field(kind, field, bad):
    with pytest.raises(InvalidInput) as err:
        R.build(kind, {**MINIMAL[kind], field: bad})
    assert err.value.field == field, err.value


@pytest.mark.parametrize("kind, values, said", [
    (R.GateRequest, {"arms": ["off"], "source": "codet:s"}, "exactly one of humanevalplus, suites_dir, dataset"),
    (R.GateRequest, {"arms": ["off"], "source": "codet:s", "suites_dir": "d", "humanevalplus": "h"}, "exactly one"),
    (R.GateRequest, {"arms": ["off"], "source": "openai", "suites_dir": "d"}, "needs its model"),
    (R.StatsRequest, {"audit_judge_run": "judge-2"}, "needs judge_run"),
    (R.JudgeRequest, {**MINIMAL[R.JudgeRequest], "backend": "replay"}, "needs replay"),
    (R.JudgeRequest, {**MINIMAL[R.JudgeRequest], "backend": "openai"}, "needs its model"),
    (R.NightlyRequest, {"gate_source": "openai", "gate_base_url": "http://127.0.0.1:9/v1"}, "gate_model"),
    (R.NightlyRequest, {"judge_backend": "openai"}, "rules or replay"),
    (R.HistoryBackfillRequest, {"arms": ["conform"]}, "give run_ids, or a date range"),
    (R.HistoryBackfillRequest, {"since": "2026-02-01", "until": "2026-01-01"}, "is after until"),
])
def test_fields_that_do_not_fit_together_are_refused(kind, values, said):
    with pytest.raises(InvalidInput, match=said):
        R.build(kind, values)


def test_build_names_the_command_line_option_a_field_came_from():
    with pytest.raises(InvalidInput) as err:
        R.build(R.AuditRequest, {"limit": 0}, options={"limit": "--limit"}, record="audit")
    assert (err.value.field, err.value.record) == ("--limit", "audit")
    with pytest.raises(InvalidInput) as err:
        R.build(R.AuditRequest, {"limit": 0})
    assert (err.value.field, err.value.record) == ("limit", "AuditRequest")


def test_requests_are_frozen_and_checked_values_normalised():
    gate = R.GateRequest(**{**MINIMAL[R.GateRequest], "arms": ["off", "conform", "off"]})
    assert gate.arms == ["off", "conform"]  # each arm once, in the order given
    with pytest.raises(ValidationError):
        gate.limit = 3
    nightly = R.NightlyRequest(dask="2")
    assert nightly.dask == R.DaskCluster(workers=2)
    backfill = R.LeakBackfillRequest(since=R.dt.date(2026, 3, 1))
    assert backfill.since == "2026-03-01"  # the leak backfill reads ISO text


def test_the_per_run_fields_are_the_nightly_and_backfill_requests_own():
    """What a run of the served deployments may set is exactly the per-run request types' fields, each a
    field of the chain's request (the served flows refuse the others)."""
    assert set(R.NightlyPerRun.model_fields) == {"limit", "arms", "profile", "judge_embedder"}
    assert set(R.BackfillPerRun.model_fields) == {"run_ids", "since", "until", "arms"}
    assert set(R.NightlyPerRun.model_fields) < set(R.NightlyRequest.model_fields)
    assert set(R.BackfillPerRun.model_fields) < set(R.HistoryBackfillRequest.model_fields)


FIXED = sorted(set(R.NightlyRequest.model_fields) - set(R.NightlyPerRun.model_fields))


@pytest.mark.parametrize("name", FIXED)
def test_a_served_nightly_run_cannot_set_a_fixed_field(name):
    from acceptgate.flows import served

    flow = served.served_nightly({}, {})
    with pytest.raises(InvalidInput, match=f"{name} is fixed when 'acceptgate serve' starts") as err:
        flow.fn(**{name: "x"})
    assert err.value.field == name


def test_a_served_run_is_checked_as_its_request():
    from acceptgate.flows import served

    backfill = served.served_backfill({"backend": "local"})
    with pytest.raises(InvalidInput, match="give run_ids, or a date range") as err:
        backfill.fn(arms=["conform"])  # no selection: refused before anything runs
    assert err.value.record == "history-backfill flow run"
    with pytest.raises(InvalidInput) as err:
        backfill.fn(run_ids=["g1"], arms=["gated"])
    assert err.value.field == "arms"
    with pytest.raises(ValueError, match="no per-run or fixed field 'colour'"):
        served.served_nightly({"colour": "red"}, {})


def test_a_command_builds_the_request_its_flow_takes_naming_options_in_errors(tmp_path):
    from acceptgate.cli import build_parser, gate_cmd

    argv = ["gate", "--arm", "conform,off", "--source", "codet:s.jsonl", "--suites", str(tmp_path), "--limit", "3",
            "--no-certify", "--wall-seconds", "4"]
    args = build_parser().parse_args(argv)
    request = gate_cmd.request_of(args, ["conform", "off"], None)
    assert (request.suites_dir, request.limit, request.certify, request.limits.wall_seconds) == (str(tmp_path), 3,
                                                                                               False, 4.0)
    for option, value in (("--per-task", "9"), ("--shard-size", "0"), ("--profile", "evalplus")):
        bad = build_parser().parse_args(argv + [option, value])
        if option == "--profile":  # a valid value: no error
            assert gate_cmd.request_of(bad, ["conform"], None).profile == "evalplus"
            continue
        with pytest.raises(InvalidInput) as err:
            gate_cmd.request_of(bad, ["conform"], None)
        assert (err.value.field, err.value.record) == (option, "gate")


@pytest.mark.parametrize("option, value, said", [
    ("--workers", "0", "greater than 0"), ("--run-id", "bad id!", "a run id is"),
    ("--backend", "no-such-backend", "unknown backend")])
def test_the_score_command_refuses_a_bad_option_with_exit_2_naming_it(tmp_path, capsys, option, value, said):
    """``acceptgate score`` builds its ScoreRequest from its options: a bad value is exit 2 naming the
    option, before anything is written."""
    from acceptgate.cli import main

    (tmp_path / "suites").mkdir()
    warehouse = tmp_path / "w.duckdb"
    argv = ["score", "--suites", str(tmp_path / "suites"), "--samples", str(tmp_path / "s.jsonl"), "--suite", "hidden",
            "--warehouse", str(warehouse), "--quiet", option, value]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert option in err and said in err, err
    assert not warehouse.exists()
