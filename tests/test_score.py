"""Batch scoring of EvalPlus-format samples: verdicts per sample, invalid lines, bad inputs, the CLI."""

from __future__ import annotations

import json

import pytest

from acceptgate.suites import suitespec
from acceptgate._util.errors import InvalidInput
from acceptgate.sandbox.backend import Limits
from acceptgate.scoring.score import score_samples
from acceptgate.datasets.samples import read_samples
from acceptgate.pipelines.requests import ScoreRequest

PROMPT = 'def double(x):\n    """>>> double(2)\n    4\n    """\n'
SUITE = suitespec.build("python-call/1", "double", [((2,), {}, 4), ((0,), {}, 0), ((-3,), {}, -6)])


@pytest.fixture(autouse=True)
def warehouse_path(tmp_path, monkeypatch):
    """The settings' warehouse, where a score run is recorded by default: this test's own."""
    from acceptgate._util import settings

    path = tmp_path / "wh" / "w.duckdb"
    path.parent.mkdir()
    monkeypatch.setenv("ACCEPTGATE_WAREHOUSE", str(path))
    settings.reload()
    return path


def samples_file(tmp_path, lines):
    path = tmp_path / "samples.jsonl"
    path.write_text("".join((l if isinstance(l, str) else json.dumps(l)) + "\n" for l in lines))
    return path


def test_a_visible_suite_stops_at_the_first_failure_a_hidden_one_never(tmp_path, local_backend):
    """Fail-fast only where nothing is hidden: the same failing samples on both kinds of suite."""
    path = samples_file(tmp_path, [{"task_id": "T/double", "solution": "def double(x):\n    return x + 2\n"},
                                   {"task_id": "T/double", "completion": "    return x / 0\n"}])
    runs = {}
    for kind in ("visible", "hidden"):
        report = score_samples(read_samples(path), {"T/double": SUITE}, {"T/double": PROMPT}, local_backend,
                               suite=kind)
        runs[kind] = [(r.verdict, r.cases_run) for r in report.rows]
    assert runs == {"visible": [("fail", 2), ("error", 1)], "hidden": [("fail", 3), ("error", 3)]}, runs


def test_scores_each_valid_sample_and_reports_invalid_lines(tmp_path, local_backend):
    path = samples_file(tmp_path, [
        {"task_id": "T/double", "completion": "    return 2 * x\n"},
        {"task_id": "T/double", "solution": "def double(x):\n    return x + 2\n"},
        "{broken",
        {"task_id": "T/double", "completion": "    return x / 0\n"},
        {"task_id": "T/double"},
        {"task_id": "T/double", "solution": "def double(x):\n    while True: pass\n"},
    ])
    report = score_samples(read_samples(path), {"T/double": SUITE}, {"T/double": PROMPT}, local_backend,
                           suite="hidden", limits=Limits(wall_seconds=1.0, cpu_seconds=2))
    got = [(r.sample_index, r.line, r.verdict, r.cases_failed, r.cases_run) for r in report.rows]
    # A hidden suite: every case is called whatever the earlier answers were (no fail-fast oracle)
    assert got == [(0, 1, "pass", 0, 3), (1, 2, "fail", 2, 3), (2, 4, "error", 3, 3), (3, 6, "timeout", 1, 1)]
    assert [(p.line, p.field) for p in report.problems] == [(3, None), (5, "solution")]
    assert report.passed == 1 and report.pass_rate == 0.25
    summary = report.summary()
    assert "1/4 samples pass" in summary and "2 invalid records not scored" in summary and "line 3" in summary
    # the invalid records stay in the denominator of the all-records rate and in the output, in file order
    assert "records: 6 = 4 scored + 2 invalid + 0 not scored; 1/6 pass over all records (16.67%)" in summary
    out = [json.loads(line) for line in report.output_rows()]
    assert [(r["line"], r["verdict"]) for r in out] == [(1, "pass"), (2, "fail"), (3, "invalid"), (4, "error"),
                                                      (5, "invalid"), (6, "timeout")]
    assert "field 'solution'" in out[4]["detail"]
    assert set(out[2]) == set(out[1])  # an invalid record has the same keys as a scored sample


def test_strict_refuses_the_file_at_its_first_invalid_record(tmp_path, local_backend):
    path = samples_file(tmp_path, [{"task_id": "T/double", "completion": "    return 2 * x\n"},
                                   {"task_id": 7, "completion": "x"}])
    with pytest.raises(InvalidInput) as exc:
        score_samples(read_samples(path), {"T/double": SUITE}, {"T/double": PROMPT}, local_backend, suite="hidden",
                      strict=True)
    assert str(path) in str(exc.value) and "line 2" in str(exc.value) and "'task_id'" in str(exc.value)


def test_all_cases_counts_every_failure(tmp_path, local_backend):
    path = samples_file(tmp_path, [{"task_id": "T/double", "solution": "def double(x):\n    return 4\n"}])
    report = score_samples(read_samples(path), {"T/double": SUITE}, {"T/double": PROMPT}, local_backend,
                           suite="hidden", fail_fast=False)
    assert [(r.verdict, r.cases_failed, r.cases_run) for r in report.rows] == [("fail", 2, 3)]


def test_unknown_task_ids_are_invalid_records_and_empty_files_errors(tmp_path, local_backend):
    path = samples_file(tmp_path, [{"task_id": "T/double", "completion": "    return 2 * x\n"},
                                   {"task_id": "T/nope", "completion": "x"}])
    report = score_samples(read_samples(path), {"T/double": SUITE}, {"T/double": PROMPT}, local_backend,
                           suite="hidden")
    assert [(p.line, p.field) for p in report.problems] == [(2, "task_id")]
    assert "unknown task id 'T/nope'" in str(report.problems[0])
    assert json.loads(report.output_rows()[1])["task_id"] == "T/nope"
    with pytest.raises(InvalidInput, match="line 2.*task_id.*unknown task id 'T/nope'"):
        score_samples(read_samples(path), {"T/double": SUITE}, {"T/double": PROMPT}, local_backend,
                      suite="hidden", strict=True)
    empty = samples_file(tmp_path, ["", "{bad"])
    with pytest.raises(InvalidInput, match="no valid samples .*line 2"):
        score_samples(read_samples(empty), {"T/double": SUITE}, {}, local_backend, suite="hidden")
    no_prompt = samples_file(tmp_path, [{"task_id": "T/double", "completion": "    return 1\n"}])
    with pytest.raises(InvalidInput, match="needs the task's prompt"):
        score_samples(read_samples(no_prompt), {"T/double": SUITE}, {}, local_backend, suite="hidden")


# --- the command line, on a suites directory written by acceptgate.datasets.suitefiles ------------------------

@pytest.fixture
def suites_dir(tmp_path):
    from acceptgate.datasets import suitefiles
    from acceptgate.datasets.task import HIDDEN, VISIBLE, ImportIssue, ImportResult, Task

    visible = suitespec.build("python-call/1", "double", [((2,), {}, 4)])
    task = Task("T/double", "test", "double", PROMPT, "def double(x):\n    return 2 * x\n",
                suites={VISIBLE: visible, HIDDEN: SUITE})
    issue = ImportIssue("T/gone", "property-check", "checked by a property", excluded="task")
    result = ImportResult("test", "mem", "0" * 64, [task], [issue])
    return suitefiles.write_suites(result, tmp_path / "suites")


def test_cli_scores_and_writes_lines(suites_dir, tmp_path, capsys):
    from acceptgate.cli import main

    samples = samples_file(tmp_path, [
        {"task_id": "T/double", "completion": "    return 2 * x\n"},
        {"task_id": "T/double", "solution": "def double(x):\n    return x * x\n"},
        "not json",
        {"task_id": "T/gone", "completion": "    pass\n"},
    ])
    out = tmp_path / "scores.jsonl"
    assert main(["score", "--suites", str(suites_dir), "--samples", str(samples), "--suite", "hidden",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "hidden suite: 1/2 samples pass (pass rate over scored samples 50.00%)" in printed
    assert "1 samples of 1 tasks without a hidden suite not scored: T/gone (property-check" in printed
    assert "1 invalid records not scored" in printed and "line 3" in printed
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["task_id"], r["sample_index"], r["verdict"], r["cases_failed"]) for r in rows] == [
        ("T/double", 0, "pass", 0), ("T/double", 1, "fail", 1), (None, None, "invalid", 0)]
    # visible suite, lines to stdout
    assert main(["score", "--suites", str(suites_dir), "--samples", str(samples), "--suite", "visible"]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 3 and "visible suite: 2/2 samples pass" in captured.err
    assert f"invalid record: {samples}: line 3" in captured.err


@pytest.mark.parametrize("lines, fragment", [
    (None, "samples file not found"),
    ([""], "no valid samples"),
    ([{"task_id": "HumanEval/0", "completion": "x"}], "no valid samples (1 invalid records, first: line 1, "
                                                       "field 'task_id': unknown task id 'HumanEval/0'"),
])
def test_cli_bad_samples_exit_2(lines, fragment, suites_dir, tmp_path, capsys, warehouse_path):
    from acceptgate.cli import main

    samples = tmp_path / "missing.jsonl" if lines is None else samples_file(tmp_path, lines)
    out = tmp_path / "o.jsonl"
    assert main(["score", "--suites", str(suites_dir), "--samples", str(samples), "--suite", "hidden",
                 "--out", str(out)]) == 2
    assert fragment in capsys.readouterr().err
    assert not out.exists() and not warehouse_path.exists()  # nothing half-written, no run recorded


def test_cli_bad_suites_dir_exit_2(tmp_path, capsys):
    from acceptgate.cli import main

    samples = samples_file(tmp_path, [{"task_id": "T/double", "completion": "x"}])
    (tmp_path / "empty").mkdir()
    assert main(["score", "--suites", str(tmp_path / "empty"), "--samples", str(samples), "--suite", "hidden"]) == 2
    assert "no manifest.json" in capsys.readouterr().err


def test_cli_case_seconds_limits_each_case(suites_dir, tmp_path, capsys):
    from acceptgate.cli import main

    slow_on_zero = ("    import time\n    if x == 0:\n        t = time.process_time()\n"
                    "        while time.process_time() - t < 1.0: pass\n    return 2 * x\n")  # CPU time, the limit's clock
    samples = samples_file(tmp_path, [{"task_id": "T/double", "completion": slow_on_zero}])
    out = tmp_path / "scores.jsonl"
    assert main(["score", "--suites", str(suites_dir), "--samples", str(samples), "--suite", "hidden",
                 "--out", str(out), "--case-seconds", "0.5"]) == 0
    assert json.loads(out.read_text())["verdict"] == "timeout"
    assert main(["score", "--suites", str(suites_dir), "--samples", str(samples), "--suite", "hidden",
                 "--out", str(out)]) == 0
    assert json.loads(out.read_text())["verdict"] == "pass"


def _json_bombs() -> list[str]:
    """Records that once ended the whole batch with a traceback: nested 100,000 deep, a 5,000-digit
    number, and a line beyond the reader's bound."""
    from acceptgate.datasets.samples import MAX_LINE_CHARS

    return ['{"task_id": "T/double", "solution": ' + "[" * 100_000 + "]" * 100_000 + "}",
            '{"task_id": "T/double", "solution": "x", "n": ' + "9" * 5000 + "}",
            '{"task_id": "T/double", "solution": "' + "x" * (MAX_LINE_CHARS + 10) + '"}']


def test_json_bombs_are_invalid_records_and_cost_no_other_sample_its_result(suites_dir, tmp_path, capsys):
    from acceptgate.cli import main

    samples = samples_file(tmp_path, [{"task_id": "T/double", "completion": "    return 2 * x\n"}, *_json_bombs(),
                                      {"task_id": "T/double", "solution": "def double(x):\n    return x * x\n"}])
    out = tmp_path / "scores.jsonl"
    assert main(["score", "--suites", str(suites_dir), "--samples", str(samples), "--suite", "hidden",
                 "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["line"], r["verdict"]) for r in rows] == [(1, "pass"), (2, "invalid"), (3, "invalid"), (4, "invalid"),
                                                      (5, "fail")]
    assert "nested 100001 levels deep" in rows[1]["detail"]
    assert "integer of 5000 digits" in rows[2]["detail"]
    assert "longer than" in rows[3]["detail"]


@pytest.mark.parametrize("bomb", [0, 1, 2])
def test_strict_refuses_a_json_bomb_with_exit_2_naming_file_and_line(bomb, suites_dir, tmp_path, capsys):
    from acceptgate.cli import main

    samples = samples_file(tmp_path, [{"task_id": "T/double", "completion": "    return 2 * x\n"}, _json_bombs()[bomb]])
    out = tmp_path / "scores.jsonl"
    assert main(["score", "--suites", str(suites_dir), "--samples", str(samples), "--suite", "hidden",
                 "--strict", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{samples}, line 2" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, f"more than the one error line (the input is checked first):\n{err}"
    assert not out.exists()


# --- a suite that fails the gauge check excludes its task, not the batch ----------------------------------

@pytest.fixture
def two_task_suites(tmp_path):
    """T/double (a right reference) and T/triple, whose reference is wrong: its hidden suite fails the gauge."""
    from acceptgate.datasets import suitefiles
    from acceptgate.datasets.task import HIDDEN, VISIBLE, ImportResult, Task

    triple = suitespec.build("python-call/1", "triple", [((2,), {}, 6), ((1,), {}, 3)])
    tasks = [Task("T/double", "test", "double", PROMPT, "def double(x):\n    return 2 * x\n",
                  suites={VISIBLE: suitespec.build("python-call/1", "double", [((2,), {}, 4)]), HIDDEN: SUITE}),
             Task("T/triple", "test", "triple", "def triple(x):\n    pass\n", "def triple(x):\n    return 3 + x\n",
                  suites={VISIBLE: triple, HIDDEN: triple})]
    return suitefiles.write_suites(ImportResult("test", "mem", "0" * 64, tasks, []), tmp_path / "suites")


def test_an_unusable_suite_excludes_its_task_with_the_reason(two_task_suites, tmp_path, capsys, monkeypatch):
    from acceptgate.datasets import suitefiles
    from acceptgate.cli import main

    monkeypatch.setenv("ACCEPTGATE_CACHE_DIR", str(tmp_path / "cache"))  # gauge records: this test's own
    reads = []
    real = suitefiles.read_suites
    monkeypatch.setattr(suitefiles, "read_suites", lambda path: reads.append(path) or real(path))
    samples = samples_file(tmp_path, [
        {"task_id": "T/double", "completion": "    return 2 * x\n"},
        {"task_id": "T/triple", "solution": "def triple(x):\n    return 3 * x\n"},
        {"task_id": "T/triple", "solution": "def triple(x):\n    return 3 + x\n"},
    ])
    out = tmp_path / "scores.jsonl"
    argv = ["score", "--suites", str(two_task_suites), "--samples", str(samples), "--suite", "hidden",
            "--out", str(out), "--verbose"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert len(reads) == 1  # the suites directory is read once, for the gauge and the scoring alike
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["task_id"], r["verdict"]) for r in rows] == [("T/double", "pass"), ("T/triple", "unusable"),
                                                           ("T/triple", "unusable")]
    assert "its hidden suite failed the gauge check: reference does not pass the hidden suite" in rows[1]["detail"]
    assert rows[1]["cases_total"] == 2 and rows[1]["render_hash"]
    assert "records: 3 = 1 scored + 0 invalid + 2 unusable + 0 not scored; 1/3 pass over all records" in captured.out
    assert "2 samples of 1 tasks unusable (their suite failed the gauge check; not scored): T/triple (its hidden " \
           "suite failed the gauge check" in captured.out
    assert "gauge: 1 suites usable" in captured.err and "1 unusable" in captured.err
    assert "score: time: load" in captured.err and "execute" in captured.err  # --verbose
    # --strict: any exclusion refuses the file, naming the task; nothing is written
    out.unlink()
    assert main(argv + ["--strict"]) == 2
    assert "task T/triple: its hidden suite failed the gauge check" in capsys.readouterr().err
    assert not out.exists()
    # without the gauge, the suite is used as it is
    assert main(argv + ["--no-gauge", "--quiet"]) == 0
    captured = capsys.readouterr()
    assert [json.loads(line)["verdict"] for line in out.read_text().splitlines()] == ["pass", "pass", "fail"]
    assert "samples" not in captured.err.replace("samples.jsonl", "")  # --quiet: no progress lines


def test_strict_refuses_samples_of_a_task_the_import_excluded(suites_dir, tmp_path, capsys):
    from acceptgate.cli import main

    samples = samples_file(tmp_path, [{"task_id": "T/double", "completion": "    return 2 * x\n"},
                                      {"task_id": "T/gone", "completion": "    pass\n"}])
    argv = ["score", "--suites", str(suites_dir), "--samples", str(samples), "--suite", "hidden", "--no-gauge"]
    assert main(argv) == 0
    capsys.readouterr()
    assert main(argv + ["--strict"]) == 2
    assert "T/gone has no hidden suite (property-check" in capsys.readouterr().err


# --- the run in the warehouse ------------------------------------------------------------------------------

def _snapshot(path, query: str):
    import duckdb

    from acceptgate.store import warehouse

    with duckdb.connect(str(warehouse.snapshot_path(path)), read_only=True) as con:
        return con.execute(query).df()


def test_a_score_run_is_recorded_in_the_warehouse_and_published(two_task_suites, tmp_path, capsys, monkeypatch,
                                                                 warehouse_path):
    from acceptgate._util.hashing import sha256_file
    from acceptgate.cli import main

    monkeypatch.setenv("ACCEPTGATE_CACHE_DIR", str(tmp_path / "cache"))  # gauge records: this test's own
    samples = samples_file(tmp_path, [
        {"task_id": "T/double", "completion": "    return 2 * x\n"},
        {"task_id": "T/double", "solution": "def double(x):\n    return x + 2\n"},
        "not json",
        {"task_id": "T/triple", "solution": "def triple(x):\n    return 3 * x\n"},  # its suite fails the gauge
    ])
    out = tmp_path / "scores.jsonl"
    argv = ["score", "--suites", str(two_task_suites), "--samples", str(samples), "--suite", "hidden", "--out", str(out)]
    assert main(argv) == 0  # the settings' warehouse
    printed = capsys.readouterr().out
    run = _snapshot(warehouse_path, "select * from score_runs").to_dict("records")
    assert len(run) == 1
    run = run[0]
    assert run["run_id"].startswith("score-") and f"score: run {run['run_id']} in {warehouse_path}" in printed
    assert (run["status"], run["run_id_origin"], run["suite"], run["gauge"], run["profile"], run["attempts"]) == (
        "ok", "derived", "hidden", "checked", "default", 1)
    assert {c: run[c] for c in ("records", "scored", "passed", "invalid", "unusable", "not_scored")} == {
        "records": 4, "scored": 2, "passed": 1, "invalid": 1, "unusable": 1, "not_scored": 0}
    assert json.loads(run["verdict_counts"]) == {"pass": 1, "fail": 1, "invalid": 1, "unusable": 1}
    assert run["samples_sha256"] == sha256_file(samples) and run["suites_from"] == str(two_task_suites)
    assert run["started_at"] <= run["finished_at"] and run["wall_seconds"] > 0
    # one row per output line, carrying what the line carries
    results = _snapshot(warehouse_path, "select * exclude (run_id) from score_results order by line")
    assert json.loads(results.to_json(orient="records")) == [json.loads(line) for line in out.read_text().splitlines()]
    attempts = _snapshot(warehouse_path, "select flow, status, published_at is not null as published from run_attempts")
    assert attempts.to_dict("records") == [{"flow": "score", "status": "ok", "published": True}]

    # the same inputs and settings: the same run, replaced (not added to); --run-id names another
    assert main(argv) == 0 and main(argv + ["--run-id", "mine"]) == 0
    capsys.readouterr()
    assert main(["sql", "--warehouse", str(warehouse_path), "--format", "json",
                 "select run_id, run_id_origin, attempts, records from score_runs order by run_id"]) == 0
    assert json.loads(capsys.readouterr().out) == [
        {"run_id": "mine", "run_id_origin": "user", "attempts": 1, "records": 4},
        {"run_id": run["run_id"], "run_id_origin": "derived", "attempts": 2, "records": 4}]
    assert len(_snapshot(warehouse_path, "select * from score_results")) == 8
    # another setting is another run
    assert main(argv + ["--all-cases"]) == 0
    assert len(_snapshot(warehouse_path, "select * from score_runs")) == 3


def test_a_score_run_whose_rows_break_an_expectation_is_quarantined_and_not_published(two_task_suites, tmp_path,
                                                                                       capsys, warehouse_path):
    import duckdb

    from acceptgate.cli import main
    from acceptgate.pipelines.families import SCORE
    from acceptgate.store import warehouse
    from acceptgate.store.expectations import ExpectationFailed

    samples = samples_file(tmp_path, [{"task_id": "T/double", "completion": "    return 2 * x\n"},
                                      {"task_id": "T/double", "solution": "def double(x):\n    return 0\n"}])
    assert main(["score", "--suites", str(two_task_suites), "--samples", str(samples), "--suite", "hidden",
                 "--no-gauge", "--run-id", "checked"]) == 0
    with duckdb.connect(str(warehouse_path), read_only=True) as con:
        row = con.execute("select * exclude (status, failed_stage, failure, attempts, first_started_at, started_at, "
                          "finished_at, wall_seconds) from score_runs").df()
        results = con.execute("select * from score_results order by line").df()
    published = _snapshot(warehouse_path, "select * from score_results")
    broken = [({"score_results": results.assign(verdict=["pass", "bogus"])},
               "score_results.expect_column_values_to_be_in_set(column='verdict')"),
              ({"score_results": results, SCORE.table: row.assign(passed=3)}, "score_runs.expect_rows_to_satisfy"),
              ({"score_results": results.assign(run_id="elsewhere")}, "score_results.expect_keys_to_exist_in")]
    for frames, expectation in broken:
        recorded = SCORE.start(warehouse_path, "checked", row=row)
        with pytest.raises(ExpectationFailed) as err:
            recorded.write_stage("score", frames, related={SCORE.table: row})
        assert err.value.stage == "score" and err.value.expectation.startswith(expectation), err.value.expectation
    with duckdb.connect(str(warehouse_path), read_only=True) as con:
        assert con.execute("select count(*) from score_results").fetchone() == (0,)  # each attempt starts clean
        assert con.execute("select status, attempts from score_runs").fetchall() == [("failed", 4)]
        assert con.execute("select count(distinct attempt) from quarantine").fetchone() == (3,)
    assert _snapshot(warehouse_path, "select * from score_results").equals(published)  # the snapshot kept it
    assert warehouse.snapshot_path(warehouse_path).exists()


def test_a_stopped_score_ends_its_attempt_interrupted_and_publishes_nothing(suites_dir, tmp_path, warehouse_path):
    """The pipeline's scoring step stopped (as Ctrl-C does): the ledger marks the attempt."""
    import duckdb

    from acceptgate.pipelines import score as pipeline

    samples = samples_file(tmp_path, [{"task_id": "T/double", "completion": "    return 2 * x\n"}])

    def stopped(unusable):
        raise KeyboardInterrupt

    request = ScoreRequest(suites_dir=str(suites_dir), samples=str(samples), suite="hidden", gauge=False)
    with pytest.raises(KeyboardInterrupt):
        pipeline.score(request, sharded=stopped)
    with duckdb.connect(str(warehouse_path), read_only=True) as con:
        assert con.execute("select flow, status, failed_stage, failure from run_attempts").fetchall() == [
            ("score", "interrupted", "score", "interrupted by SIGINT")]
        assert con.execute("select status, records from score_runs").fetchall() == [("interrupted", None)]
    from acceptgate.store import warehouse

    assert not warehouse.snapshot_path(warehouse_path).exists()
