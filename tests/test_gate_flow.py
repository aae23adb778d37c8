"""The Prefect ``gate`` flow end to end: CONFORM and OFF on CodeT's first five samples for the first 14
HumanEval+ tasks, decisions known from the samples; then the same run again through the CLI."""

from __future__ import annotations

import json

import pytest

from acceptgate.store import warehouse
from acceptgate.cli import main
from acceptgate.pipelines.requests import GateRequest

pytestmark = pytest.mark.prefect

TABLES = ["gate_runs", "gate_decisions", "gate_attempts", "gate_messages", "deliveries", "run_stages"]

# (decision, attempts used, visible verdict of each draw, GT verdict of the delivered program) from the
# first five CodeT samples of each task.
KNOWN_CONFORM = {
    "HumanEval/0": ("delivered", 1, ["pass"], "pass"),
    "HumanEval/1": ("refused", 5, ["fail", "fail", "fail", "error", "fail"], None),
    "HumanEval/3": ("delivered", 1, ["pass"], "fail"),  # passes V, fails GT: a false delivery
    "HumanEval/13": ("delivered", 2, ["error", "pass"], "pass"),  # sample 0 calls an undefined gcd()
}


@pytest.fixture(scope="module")
def suites_14(tmp_path_factory, humanevalplus_path, local_backend):
    """The first 14 HumanEval+ tasks, imported once and written as a suites directory."""
    from acceptgate.datasets import suitefiles
    from acceptgate.datasets.importers import humanevalplus

    result = humanevalplus.load(humanevalplus_path, local_backend, limit=14)
    return suitefiles.write_suites(result, tmp_path_factory.mktemp("gate") / "suites")


def test_gate_flow_conform_and_off_on_codet(prefect_harness, tmp_path, suites_14, codet_samples_path, capsys):
    from acceptgate.flows.gate import gate

    path = tmp_path / "w.duckdb"
    source = f"codet:{codet_samples_path}"
    summary = gate(GateRequest(certify=False, arms=["conform", "off"], source=source, suites_dir=str(suites_14),
                               warehouse=str(path)))
    conform, off = summary.arms["conform"], summary.arms["off"]
    # HumanEval/4 is excluded: its V passes `return True` (True == 1.0), which fails the hidden suite, so
    # V's gauge fails (test_return_true_for_humaneval_4_is_refused_by_the_gauge_not_delivered); 13 tasks gated
    assert summary.run.exclusions == (("HumanEval/4", "gauge", summary.run.exclusions[0][2]),)
    assert (conform.tasks, conform.delivered, conform.refused, conform.false_deliveries) == (13, 9, 4, 2)
    assert (off.tasks, off.delivered, off.refused, off.false_deliveries) == (13, 13, 0, 9)
    with warehouse.connect(path, read_only=True) as con:
        decisions = {tid: (d, n) for tid, d, n in con.execute(
            "select task_id, decision, attempts_used from gate_decisions where arm = 'conform'").fetchall()}
        verdicts = {}
        for tid, v in con.execute("select task_id, list(v_verdict order by attempt) from gate_attempts "
                                  "where arm = 'conform' group by task_id").fetchall():
            verdicts[tid] = v
        gt = dict(con.execute("select task_id, gt_verdict from deliveries where arm = 'conform'").fetchall())
        for tid, (decision, used, vs, gt_verdict) in KNOWN_CONFORM.items():
            assert decisions[tid] == (decision, used), tid
            assert verdicts[tid] == vs, tid
            assert gt[tid] == gt_verdict, tid
        off_rows = con.execute("select count(*), sum(attempts_used), count(*) filter (where false_delivery) "
                               "from deliveries where arm = 'off'").fetchone()
        assert off_rows == (13, 13, 9)
        rates = con.execute("select arm, tasks, delivered, false_deliveries, false_rate_over_all_tasks, "
                            "false_rate_over_delivered from gate_rates order by arm").fetchall()
        assert rates == [("conform", 13, 9, 2, 2 / 13, 2 / 9), ("off", 13, 13, 9, 9 / 13, 9 / 13)]
        authors = set(con.execute("select distinct author, purpose from gate_messages").fetchall())
        assert authors == {("task", "generation"), ("model", "generation"), ("harness", "selection"),
                           ("harness", "stop_decision")}
        assert con.execute("select status, task_count, arms from gate_runs").fetchall() == [("ok", 13, "conform,off")]
        paired = con.execute("select count(*), count(*) filter (where same_program) from deliveries_paired").fetchone()
        assert paired[0] == 13
    counts = warehouse.row_counts(path, TABLES)

    # The same run again through the command line: same run id, same rows, printed table.
    code = main(["gate", "--no-certify", "--arm", "conform,off", "--source", source, "--suites", str(suites_14),
                 "--warehouse", str(path), "--verbose"])
    captured = capsys.readouterr()
    out = captured.out
    assert code == 0
    # --verbose: where the time went, by phase
    timing = next(line for line in captured.err.splitlines() if line.startswith("gate: time: "))
    assert all(f"{phase} " in timing for phase in ("load", "gauge", "execute", "write")), timing
    assert f"gate run {summary.run.run_id}: 13 tasks" in out
    # the phase before the arms is not a silence: what it reads and checks, as it goes
    assert f"reading the candidates of {source} for 14 tasks" in captured.err
    assert "gauge check of the suites of 14 tasks" in captured.err
    assert "false / all tasks" in out and "false / delivered" in out
    assert "conform vs off: 77.8%" in out
    assert warehouse.row_counts(path, TABLES) == counts
    assert {t: warehouse.duplicate_keys(path, t) for t in TABLES if t != "gate_runs"} == {
        t: 0 for t in TABLES if t != "gate_runs"}


def test_gate_cli_scores_gt_under_the_evalplus_profile(prefect_harness, tmp_path, suites_14, codet_samples_path,
                                                      humanevalplus_path, local_backend, capsys):
    """`gate --profile evalplus`: GT scored with EvalPlus's per-input limits from the import's timing, the
    profile stored in every deliveries row; suites without timing are refused before anything is written."""
    from acceptgate.datasets import suitefiles
    from acceptgate.datasets.importers import humanevalplus

    path = tmp_path / "w.duckdb"
    source = f"codet:{codet_samples_path}"
    assert main(["gate", "--no-certify", "--arm", "conform", "--source", source, "--suites", str(suites_14), "--limit", "5",
                 "--profile", "evalplus", "--warehouse", str(path)]) == 0
    with warehouse.connect(path, read_only=True) as con:
        rows = {tid: (v, p) for tid, v, p in con.execute(
            "select task_id, gt_verdict, gt_profile from deliveries").fetchall()}
    assert {p for _, p in rows.values()} == {"evalplus"}
    for tid in ("HumanEval/0", "HumanEval/1", "HumanEval/3"):  # /4: excluded by V's gauge
        assert rows[tid][0] == KNOWN_CONFORM[tid][3], tid
    assert "HumanEval/4" not in rows

    result = humanevalplus.load(humanevalplus_path, local_backend, limit=2)
    for task in result.tasks:
        task.reference_seconds = {}
    untimed = suitefiles.write_suites(result, tmp_path / "untimed")
    other = tmp_path / "other.duckdb"
    capsys.readouterr()
    assert main(["gate", "--no-certify", "--arm", "conform", "--source", source, "--suites", str(untimed), "--profile", "evalplus",
                 "--warehouse", str(other)]) == 2
    assert "reference's time per hidden case" in capsys.readouterr().err
    assert not other.exists()


@pytest.mark.parametrize("argv, fragment", [
    (["--arm", "strict"], "unknown arm 'strict'"),
    (["--arm", "conform", "--per-task", "9"], "--per-task"),
    (["--arm", "conform", "--limit", "0"], "--limit"),
    (["--arm", "conform", "--source", "codet:/nonexistent.jsonl.gz"], "not found"),
    (["--arm", "conform", "--source", "bogus"], "unknown source"),
    (["--arm", "hmix", "--source", "openai"], "needs --base-url and --model"),
    (["--arm", "conform", "--humanevalplus", "/nonexistent.jsonl"], "not found"),
    (["--arm", "conform", "--max-fpr-attack", "101"], "--max-fpr-attack"),
])
def test_gate_cli_bad_input_exits_2(argv, fragment, codet_samples_path, humanevalplus_path, tmp_path, capsys):
    defaults = {"--source": f"codet:{codet_samples_path}", "--humanevalplus": str(humanevalplus_path)}
    for flag, value in defaults.items():
        if flag not in argv:
            argv = argv + [flag, value]
    assert main(["gate", "--no-certify", *argv, "--warehouse", str(tmp_path / "w.duckdb")]) == 2
    assert fragment in capsys.readouterr().err


def test_gate_flow_hmix_through_a_local_endpoint(prefect_harness, tmp_path, suites_14, monkeypatch):
    """H-MIX over two real tasks against a scripted OpenAI-compatible server on 127.0.0.1."""
    from acceptgate.datasets import suitefiles
    from acceptgate.sources.openai_chat import ChatConfig
    from acceptgate.flows.gate import gate
    from test_openai_chat import ChatServer

    right = ("```python\nfrom typing import List\n\ndef has_close_elements(numbers: List[float], threshold: float) -> bool:\n"
             "    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[i + 1:])\n```")
    wrong = "```python\ndef separate_paren_groups(paren_string):\n    return []\n```"

    def reply(body):
        first = body["messages"][0]["content"]
        return {"content": right if "def has_close_elements" in first else wrong}

    monkeypatch.setenv("TEST_CHAT_KEY", "sk-test")
    with ChatServer(reply) as server:
        config = ChatConfig(base_url=server.base_url, model="scripted-1", api_key_env="TEST_CHAT_KEY",
                            backoff_seconds=0.01)
        summary = gate(GateRequest(certify=False, arms=["hmix"], source="openai", suites_dir=str(suites_14), limit=2,
                                   warehouse=str(tmp_path / "w.duckdb"), chat_config=config, workers=1))
    assert summary.arms["hmix"].delivered == 1 and summary.arms["hmix"].refused == 1
    with warehouse.connect(tmp_path / "w.duckdb", read_only=True) as con:
        decisions = con.execute("select task_id, decision, attempts_used, stop_reason from gate_decisions "
                                "order by task_id").fetchall()
        feedback = con.execute("select text from gate_messages where task_id = 'HumanEval/1' and author = 'harness' "
                               "and purpose = 'revision_feedback' and request = 3 order by part").fetchall()
        tokens = con.execute("select sum(prompt_tokens + completion_tokens) from gate_attempts").fetchone()[0]
    assert decisions[0][:3] == ("HumanEval/0", "delivered", 1)
    assert decisions[1] == ("HumanEval/1", "refused", 3, "same failure signature as the previous round (second repeat)")
    assert feedback[0][0] == "AssertionError: args=('( ) (( )) (( )( ))',) got=[] want=['()', '(())', '(()())']"
    assert feedback[1][0] == "Your last two attempts failed the same way. Try a different approach."
    assert tokens == 4 * 120 and len(server.requests) == 4
    # Nothing unique to the hidden suites was sent: no hidden input or expected value of these tasks
    # (long enough to be distinctive) that is absent from the prompt and visible suite appears in a request.
    sd = suitefiles.read_suites(suites_14)
    sent = "\n".join(r["raw"] for r in server.requests)
    for tid in ("HumanEval/0", "HumanEval/1"):
        t = sd.tasks[tid]
        public = t.prompt + "".join(c.args_text + c.expected_text for c in t.suites["visible"].cases)
        secret = {x for c in t.suites["hidden"].cases for x in (c.args_text, c.expected_text)
                  if len(x) >= 12 and x not in public}
        assert secret and not [x for x in secret if json.dumps(x)[1:-1] in sent or x in sent]


def test_gate_expectations_catch_inconsistent_rows(local_backend, tmp_path):
    """The stage checks can fail: a delivered attempt that failed V, a false_delivery flag that lies."""
    from acceptgate.suites import suitespec
    from acceptgate.store import expectations
    from acceptgate.gates.delivery import score_deliveries
    from acceptgate.gates import run_gate
    from acceptgate.gates import run as core
    from acceptgate.sources.base import PublicTask
    from acceptgate.sources.replay import ReplaySource
    from acceptgate.datasets.samples import Sample, SampleFile
    from acceptgate.datasets.task import HIDDEN, VISIBLE, Task

    vis = suitespec.build("python-call/1", "inc", [((1,), {}, 2)])
    gt = suitespec.build("python-call/1", "inc", [((1,), {}, 2), ((5,), {}, 6)])
    task = Task("T/inc", "test", "inc", "def inc(x):\n", "", suites={VISIBLE: vis, HIDDEN: gt})
    src = ReplaySource(SampleFile("m", [Sample("T/inc", 1, 0, "    return 2\n", "completion"),
                                        Sample("T/inc", 2, 1, "    return x + 1\n", "completion")], []))
    outcomes = [run_gate(arm, PublicTask.from_task(task), src, local_backend) for arm in ("conform", "off")]
    run = core.make_run(source="openai", tasks=[task], tasks_from="mem", arms=["conform", "off"],
                        per_task=5, backend="local", run_id="t-1")
    gate = core.gate_frames(run, outcomes)
    deliveries = core.delivery_frames(run, score_deliveries(outcomes, {"T/inc": gt}, local_backend))
    assert expectations.validate_stage("gate", gate) > 0
    assert expectations.validate_stage("deliveries", deliveries, related=gate) > 0

    bad = {k: v.copy() for k, v in gate.items()}
    attempts = bad["gate_attempts"]
    attempts.loc[(attempts.arm == "conform") & (attempts.outcome == "delivered"), "v_verdict"] = "fail"
    with pytest.raises(expectations.ExpectationFailed, match="v_verdict == 'pass'"):
        expectations.validate_stage("gate", bad)
    lie = deliveries["deliveries"].copy()
    lie.loc[lie.arm == "off", "false_delivery"] = False  # OFF delivered `return 2`, which fails GT
    with pytest.raises(expectations.ExpectationFailed, match="false_delivery"):
        expectations.validate_stage("deliveries", {"deliveries": lie}, related=gate)


def test_gate_cli_every_arm_with_a_live_model(prefect_harness, tmp_path, suites_14, monkeypatch, capsys):
    """`gate --arm conform --arm hmix --arm off --source openai --base-url ...` against a scripted model on
    127.0.0.1 whose first reply to a conversation is wrong and every later one right: CONFORM and H-MIX
    deliver the right program on the second draw, OFF the reply it got (right: CONFORM's message came first)."""
    from test_openai_chat import ChatServer

    head = "```python\nfrom typing import List\n\ndef has_close_elements(numbers: List[float], threshold: float) -> bool:\n"
    wrong = head + "    return False\n```"
    right = head + "    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[i + 1:])\n```"
    seen: dict[str, int] = {}

    def reply(body):
        first = body["messages"][0]["content"]
        seen[first] = seen.get(first, 0) + 1
        return {"content": wrong if seen[first] == 1 else right}

    path = tmp_path / "w.duckdb"
    monkeypatch.setenv("TEST_CHAT_KEY", "sk-test")
    with ChatServer(reply) as server:
        code = main(["gate", "--no-certify", "--arm", "conform", "--arm", "hmix", "--arm", "off", "--source", "openai",
                     "--base-url", server.base_url, "--model", "scripted-1", "--api-key-env", "TEST_CHAT_KEY",
                     "--suites", str(suites_14), "--limit", "1", "--workers", "1", "--warehouse", str(path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert len(server.requests) == 5  # CONFORM 2, H-MIX 2, OFF 1
    with warehouse.connect(path, read_only=True) as con:
        decisions = con.execute("select arm, decision, attempts_used, delivered_attempt from gate_decisions "
                                "order by arm").fetchall()
        verdicts = dict(con.execute("select arm, list(v_verdict order by attempt) from gate_attempts "
                                    "group by arm").fetchall())
        gt = dict(con.execute("select arm, gt_verdict from deliveries").fetchall())
        sent = con.execute("select count(*) from gate_messages where arm = 'conform' and role = 'user' "
                           "and author = 'task'").fetchone()[0]
        run = con.execute("select source, gauge from gate_runs").fetchone()
    assert decisions == [("conform", "delivered", 2, 2), ("hmix", "delivered", 2, 2), ("off", "delivered", 1, 1)]
    assert verdicts["conform"] == ["fail", "pass"] and verdicts["hmix"] == ["fail", "pass"]
    assert gt == {"conform": "pass", "hmix": "pass", "off": "pass"}
    assert sent == 2  # each CONFORM draw recorded as sent, the task's text by its author
    assert run == ("openai", "checked")


def test_return_true_for_humaneval_4_is_refused_by_the_gauge_not_delivered(prefect_harness, tmp_path, suites_14,
                                                                          humanevalplus_path, capsys):
    """HumanEval/4's docstring example expects 1.0 and True == 1.0, so ``return True`` passes V. It fails
    the reference on the hidden inputs, so V's gauge fails naming it and the task is excluded, with its
    reason; it is not delivered (it used to be: a false delivery). The other tasks are gated as ever."""
    import gzip
    import json

    rows = {r["task_id"]: r for r in map(json.loads, gzip.open(humanevalplus_path, "rt"))}
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps({"task_id": t, "solution": s}) + "\n" for t, s in (
        ("HumanEval/4", rows["HumanEval/4"]["prompt"] + "    return True\n"),
        ("HumanEval/0", rows["HumanEval/0"]["prompt"] + rows["HumanEval/0"]["canonical_solution"]))))
    path = tmp_path / "w.duckdb"
    assert main(["gate", "--no-certify", "--arm", "conform", "--source", f"evalplus:{samples}", "--suites",
                 str(suites_14), "--warehouse", str(path)]) == 0
    out = capsys.readouterr().out
    assert "excluded before any gate: 1 tasks: HumanEval/4 (gauge: its visible suite failed the gauge check: wrong " \
           "sample constant-true passes the visible suite but fails the reference on the hidden inputs" in out, out
    with warehouse.connect(path, read_only=True) as con:
        delivered = con.execute("select task_id, false_delivery from deliveries where delivered").fetchall()
        excluded = con.execute("select task_id, stage from gate_exclusions").fetchall()
    assert delivered == [("HumanEval/0", False)] and excluded == [("HumanEval/4", "gauge")]
