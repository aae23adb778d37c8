"""acceptgate.pipelines.schedule without Prefect: the declared stage chain, the backfill request, the run selection."""

from __future__ import annotations

import datetime as dt
import inspect
from pathlib import Path

import pytest

from acceptgate.gates import DEFAULT_MAX_FPR_ATTACK
from acceptgate.pipelines import requests, schedule
from acceptgate.pipelines.requests import NightlyRequest
from acceptgate.store import warehouse
from acceptgate._util.errors import InvalidInput


def test_stage_chain_order_and_explicit_install_check():
    names = [s.name for s in schedule.NIGHTLY_STAGES]
    # seed 002: six gates first, then the agent -- tasks are certified before any gate delivers on them
    assert names == ["audit", "certify", "gates", "leak-audit", "stats", "judge", "judge-stats"]
    produced = {s.name: s.produces for s in schedule.NIGHTLY_STAGES if s.produces}
    assert produced == {"gates": "gate_run", "judge": "judge_run"}
    # which flow implements a stage is the flows layer's (flows/stage_flows.py, Prefect-free)
    from acceptgate.flows import stage_flows

    every = schedule.NIGHTLY_STAGES + schedule.BACKFILL_STAGES
    assert all(stage_flows.installed(stage_flows.module_of(s)) for s in every)
    assert stage_flows.module_of(schedule.Stage("x", "", requests.AuditRequest, lambda n, p: None)) is None  # no flow
    assert not stage_flows.installed(None)
    assert not stage_flows.installed("acceptgate.flows.no_such_stage")
    assert not stage_flows.installed("no_such_package.mod")


def _stage(name: str) -> schedule.Stage:
    return next(s for s in schedule.NIGHTLY_STAGES + schedule.BACKFILL_STAGES if s.name == name)


def _ask(name: str, produced: dict | None = None, **values):
    """The request stage ``name`` builds from a nightly request of ``values``."""
    return _stage(name).request(NightlyRequest(**values), produced or {})


def test_each_stage_builds_the_request_its_flow_takes():
    import typing

    from acceptgate.flows import stage_flows

    for stage in schedule.NIGHTLY_STAGES + schedule.BACKFILL_STAGES:
        fn = stage_flows.load(stage).fn
        assert list(inspect.signature(fn).parameters)[0] == "request", stage.name
        assert typing.get_type_hints(fn)["request"] is stage.kind, stage.name
    assert typing.get_type_hints(stage_flows.load(_stage("gates")).fn)["request"] is not requests.AuditRequest
    audit = _ask("audit", warehouse="w.duckdb", backend="docker", limit=3, arms=["off"])
    assert isinstance(audit, requests.AuditRequest)
    assert audit.model_dump(exclude_defaults=True) == {"warehouse": "w.duckdb", "backend": "docker", "limit": 3}


def test_gates_stage_needs_a_source_and_tasks(tmp_path):
    x, d = tmp_path / "x.jsonl", tmp_path / "d"
    x.write_text("")
    d.mkdir()
    assert isinstance(_ask("gates"), schedule.Skip)
    assert isinstance(_ask("gates", gate_source=f"codet:{x}"), schedule.Skip)
    gate = _ask("gates", gate_source=f"codet:{x}", gate_suites=str(d), arms=["off"])
    assert (gate.source, gate.suites_dir, gate.humanevalplus, gate.arms) == (f"codet:{x}", str(d), None, ["off"])
    assert (gate.profile, gate.certify, gate.max_fpr_attack) == ("default", True, DEFAULT_MAX_FPR_ATTACK)
    loose = _ask("gates", gate_source=f"codet:{x}", gate_suites=str(d), no_certify=True, max_fpr_attack=40)
    assert (loose.certify, loose.max_fpr_attack) == (False, 40.0)
    gate = _ask("gates", gate_source=f"codet:{x}", gate_suites=str(d), profile="evalplus")
    assert (gate.profile, gate.arms) == ("evalplus", ["conform", "off"])
    gone = _ask("gates", gate_source="codet:data/none.jsonl.gz", gate_suites=str(d))
    assert isinstance(gone, schedule.Skip) and "data/none.jsonl.gz not found" in gone.reason


def test_gates_stage_with_a_live_model(tmp_path, monkeypatch):
    """gate_source openai: the stage's request has a ChatConfig from gate_base_url / gate_model /
    gate_api_key_env; without them the night is refused before any stage runs (not skipped: the
    parameters are wrong)."""
    gate = _ask("gates", gate_source="openai", gate_suites=str(tmp_path), gate_base_url="http://127.0.0.1:9/v1",
                gate_model="m", gate_api_key_env="K")
    chat = gate.chat_config
    assert (chat.base_url, chat.model, chat.api_key_env) == ("http://127.0.0.1:9/v1", "m", "K")
    assert gate.source == "openai" and gate.humanevalplus is None
    with pytest.raises(InvalidInput, match="gate_base_url and gate_model") as err:
        requests.build(NightlyRequest, {"gate_source": "openai", "gate_model": "m"})
    assert err.value.record == "NightlyRequest"
    with pytest.raises(InvalidInput, match="rules or replay"):
        requests.build(NightlyRequest, {"judge_backend": "openai"})
    samples = tmp_path / "s.jsonl"
    samples.write_text("")
    assert _ask("gates", gate_source=f"codet:{samples}", gate_suites=str(tmp_path)).chat_config is None


def test_stats_and_judge_stages_take_tonights_runs(tmp_path):
    """stats compares tonight's gate run (never "the latest in the warehouse"), judge-stats tonight's
    judge run; the judge stage runs only with its three files, replay when judge_replay is given."""
    assert isinstance(_ask("stats"), schedule.Skip)
    stats = _ask("stats", {"gate_run": "gate-1"})
    assert (stats.gate_run, stats.judge_run) == ("gate-1", None)
    assert isinstance(_ask("stats", {"gate_run": "gate-1"}, arms=["conform"]), schedule.Skip)
    assert isinstance(_ask("judge-stats", {"gate_run": "gate-1"}), schedule.Skip)
    stats = _ask("judge-stats", {"judge_run": "judge-1"})
    assert (stats.judge_run, stats.gate_run) == ("judge-1", None)
    files = {k: tmp_path / f"{k}.jsonl" for k in ("judge_records", "judge_cards", "judge_memory", "judge_replay")}
    for f in files.values():
        f.write_text("")
    assert isinstance(_ask("judge"), schedule.Skip)
    assert "judge_cards" in _ask("judge", judge_records=str(files["judge_records"])).reason
    params = {k: str(v) for k, v in files.items() if k != "judge_replay"}
    judge = _ask("judge", **params)
    assert (judge.backend, judge.embedder, judge.inputs().records) == ("rules", "minilm", params["judge_records"])
    judge = _ask("judge", **params, judge_replay=str(files["judge_replay"]), judge_embedder="hashing")
    assert (judge.backend, judge.embedder, judge.inputs().replay) == ("replay", "hashing", str(files["judge_replay"]))
    gone = _ask("judge", **{**params, "judge_memory": str(tmp_path / "none.jsonl")})
    assert isinstance(gone, schedule.Skip) and "none.jsonl not found" in gone.reason


def test_a_stage_hands_its_run_id_on():
    class Gate:
        run = type("R", (), {"run_id": "gate-7"})()

    assert schedule.run_id_of(Gate()) == "gate-7"
    assert schedule.run_id_of(type("J", (), {"run_id": "judge-3"})()) == "judge-3"
    assert schedule.run_id_of(object()) is None


def test_certify_stage_takes_the_gate_tasks_by_default(tmp_path):
    """The chain certifies on the gates' HumanEval+ tasks with the codet samples, without more parameters."""
    hep, samples, suites = tmp_path / "hep.jsonl", tmp_path / "s.jsonl.gz", tmp_path / "suites"
    hep.write_text("")
    samples.write_text("")
    suites.mkdir()
    request = _ask("certify", gate_source=f"codet:{samples}", gate_humanevalplus=str(hep), gate_suites=str(suites),
                   limit=3)
    assert (request.suites_dir, request.dataset, request.samples, request.limit) == (str(suites), str(hep),
                                                                                     str(samples), 3)
    skip = _ask("certify", gate_source=f"codet:{samples}")
    assert isinstance(skip, schedule.Skip) and "nothing to certify" in skip.reason
    summary = schedule.ChainSummary("nightly", [schedule.StageOutcome("audit", "ok"),
                                                schedule.StageOutcome("certify", "skipped", skip.reason)])
    assert summary.lines()[0] == "nightly: audit ok, certify skipped (1 of 2 stages ran, SKIPPED: certify)"
    assert summary.lines()[1] == f"  certify: {skip.reason}"


def test_import_suites_once_beside_the_warehouse(tmp_path, humanevalplus_path):
    first = schedule.import_suites(str(humanevalplus_path), tmp_path / "w.duckdb", "local", 2)
    assert Path(first).parent == tmp_path / "suites" and (Path(first) / "manifest.json").is_file()
    stamp = (Path(first) / "manifest.json").stat().st_mtime_ns
    assert schedule.import_suites(str(humanevalplus_path), tmp_path / "w.duckdb", "local", 2) == first
    assert (Path(first) / "manifest.json").stat().st_mtime_ns == stamp  # reused, not imported again


@pytest.mark.parametrize("values, field", [
    ({}, None),
    ({"arms": ["conform"]}, None),
    ({"run_ids": ["ok"], "arms": ["gated"]}, "arms"),
    ({"run_ids": ["bad id"]}, "run_ids"),
    ({"since": "2026-02-01", "until": "2026-01-01"}, None),
    ({"run_ids": ["a"], "colour": "red"}, "colour"),
])
def test_backfill_request_rejects_with_the_field(values, field):
    with pytest.raises(InvalidInput) as err:
        requests.build(requests.HistoryBackfillRequest, values)
    assert err.value.field == field


def test_select_runs_by_id_date_and_arm(tmp_path):
    path = tmp_path / "w.duckdb"
    warehouse.migrate(path)
    day = dt.datetime(2026, 3, 1, 12, tzinfo=dt.timezone.utc)
    with warehouse.transaction(path) as con:
        con.execute("insert into runs (run_id, run_id_origin, pipeline, acceptgate_version, dataset, source, "
                    "source_sha256, backend, status, attempts, first_started_at, started_at) values "
                    "('audit-a', 'user', 'audit/1', '0', 'humaneval', 's', 'h', 'local', 'ok', 1, ?, ?)", [day, day])
        for run_id, arms, when in (("g1", "conform,off", day), ("g2", "hmix", day + dt.timedelta(days=5))):
            con.execute("insert into gate_runs (run_id, run_id_origin, pipeline, acceptgate_version, source, "
                        "tasks_from, tasks_sha256, task_count, arms, per_task, backend, status, started_at) values "
                        "(?, 'user', 'gate/1', '0', 'codet:x', 'd', 'h', 1, ?, 5, 'local', 'ok', ?)",
                        [run_id, arms, when])
    pick = lambda **kw: [r.run_id for r in schedule.select_runs(path, requests.BackfillPerRun(**kw))]  # noqa: E731
    assert pick(since=dt.date(2026, 3, 1)) == ["audit-a", "g1", "g2"]
    assert pick(since=dt.date(2026, 3, 1), until=dt.date(2026, 3, 1)) == ["audit-a", "g1"]
    assert pick(since=dt.date(2026, 3, 1), arms=["off"]) == ["g1"]
    assert pick(run_ids=["g2", "audit-a"]) == ["audit-a", "g2"]
    with pytest.raises(InvalidInput, match="no such run"):
        pick(run_ids=["nope"])
