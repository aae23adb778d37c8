"""The command line: every command has help; spec check / render / exec behave as SYSTEM.md section 2 says."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from acceptgate.cli import COMMAND_MODULES, build_parser, command_module, main

GOLDEN = Path(__file__).parent / "golden"


def _commands(parser, prefix=()):
    for action in parser._subparsers._group_actions if parser._subparsers else []:
        for name, sub in action.choices.items():
            yield prefix + (name,)
            yield from _commands(sub, prefix + (name,))


def test_every_command_has_help(capsys):
    commands = list(_commands(build_parser()))
    assert ("spec", "check") in commands and ("exec",) in commands
    for cmd in commands:
        with pytest.raises(SystemExit) as exit_:
            main([*cmd, "--help"])
        assert exit_.value.code == 0
        out = capsys.readouterr().out
        assert "usage:" in out
        assert "%%" not in out, f"{' '.join(cmd)} --help shows a doubled percent sign"


def test_each_command_parses_with_only_its_own_module():
    """main() builds only the named command's parser: every module registers exactly the command its name
    maps to, so none is unreachable that way, and a command starts without the others' imports."""
    top = {cmd[0] for cmd in _commands(build_parser()) if len(cmd) == 1}
    assert {command_module([name]) for name in top} == set(COMMAND_MODULES)
    for name in top:
        assert {cmd[0] for cmd in _commands(build_parser(command_module([name]))) if len(cmd) == 1} == {name}
    assert command_module(["--help"]) is None and command_module([]) is None and command_module(["nope"]) is None
    done = subprocess.run([sys.executable, "-c", "import sys; from acceptgate.cli import main; "
                           "code = main(['spec', 'check', sys.argv[1]]); "
                           "print(sorted(m for m in ('duckdb', 'numpy', 'acceptgate.store.warehouse') if m in sys.modules))",
                           str(GOLDEN.parent / "no-such-spec.json")], capture_output=True, text=True)
    assert done.stdout.strip() == "[]", (done.stdout, done.stderr[-2000:])


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "acceptgate.cli", *args], capture_output=True, text=True)


def test_spec_check_valid_prints_hashes():
    out = run_cli("spec", "check", str(GOLDEN / "add.json"))
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["spec_hash"] == "d3e7d337db8a4cb8f236c54b959d9c9636340e232cf28efda48d42f1264af778"
    assert len(doc["render_hash"]) == 64


def test_spec_check_invalid_exits_2_naming_case_and_construct(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"dialect": "python-call/1", "entry_point": "f", "cases": [
        {"args": "[1]", "expected": "1"},
        {"args": "[__import__('os').system('touch pwned')]", "expected": "0"}]}))
    out = run_cli("spec", "check", str(bad))
    assert out.returncode == 2
    assert "case 1" in out.stderr and "'args'" in out.stderr and "call" in out.stderr
    assert out.stdout == ""
    assert not (tmp_path / "pwned").exists() and not Path("pwned").exists()


def test_spec_render_prints_the_harness():
    out = run_cli("spec", "render", str(GOLDEN / "add.json"))
    assert out.returncode == 0
    assert "CASES = [\n    ((1, 2), {}, 3),\n    ((-5, 5), {}, 0),\n]" in out.stdout


def test_exec_prints_one_json_result(tmp_path):
    cand = tmp_path / "cand.py"
    cand.write_text("def add(a, b):\n    return a + b if a > 0 else 1\n")
    out = run_cli("exec", "--spec", str(GOLDEN / "add.json"), "--candidate", str(cand))
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["verdict"] == "fail"
    assert result["cases"][1] == {"index": 1, "status": "fail", "args": "(-5, 5)", "got": "1", "want": "0"}
    for key in ("spec_hash", "render_hash", "candidate_sha256", "isolation"):
        assert key in result


@pytest.mark.parametrize("args", [
    ("exec", "--spec", "missing.json", "--candidate", "x.py"),
    ("exec", "--spec", str(GOLDEN / "add.json"), "--candidate", "missing.py"),
    ("exec", "--spec", str(GOLDEN / "add.json"), "--candidate", str(GOLDEN / "add.json"), "--backend", "nope"),
    ("spec", "render", "missing.json"),
])
def test_invalid_input_exits_2(args):
    out = run_cli(*args)
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "invalid input" in out.stderr


def test_gate_source_coverage_names_invalid_records_and_tasks_without_samples(tmp_path):
    """gate --source evalplus: a bad line and an unknown task id are invalid records (named, counted,
    never drawn); a task without samples is not gated (named), instead of being counted as refused."""
    from acceptgate.suites import suitespec
    from acceptgate._util.errors import InvalidInput
    from acceptgate.gates import run as core
    from acceptgate.sources.replay import ReplaySource
    from acceptgate.datasets.task import HIDDEN, VISIBLE, Task

    spec = suitespec.build("python-call/1", "f", [((1,), {}, 1)])
    tasks = [Task(f"T/{i}", "test", "f", "def f(x):\n", "", suites={VISIBLE: spec, HIDDEN: spec}) for i in range(3)]
    samples = tmp_path / "s.jsonl"
    samples.write_text("\n".join([json.dumps({"task_id": "T/0", "completion": "    return x\n"}),
                                  "{not json",
                                  json.dumps({"task_id": "T/nope", "completion": "    return x\n"}),
                                  json.dumps({"task_id": "T/1", "completion": "    return 0\n"})]) + "\n")
    known = frozenset(t.task_id for t in tasks)
    with pytest.raises(InvalidInput, match="line 2"):
        ReplaySource.from_path(samples, strict=True)
    src = ReplaySource.from_path(samples, strict=False)
    cov = core.source_coverage(src, f"evalplus:{samples}", tasks, known)
    assert [c.split(": ", 1)[1] for c in cov.invalid] == [
        "line 2: not JSON (Expecting property name enclosed in double quotes at column 2)",
        "line 3, field 'task_id': unknown task id 'T/nope' (not in the tasks)"]
    assert cov.no_samples == ["T/2"]
    assert [t.task_id for t in core.covered(tasks, cov)] == ["T/0", "T/1"]
    assert any(line.startswith("invalid: 2 records") for line in cov.lines())
    assert any(line.startswith("not gated: 1 tasks without samples") and "T/2" in line for line in cov.lines())
    with pytest.raises(InvalidInput, match="line 2"):
        core.source_coverage(src, f"evalplus:{samples}", tasks, known, strict=True)
    # a task id known to the suites but past --limit is no invalid record
    cov = core.source_coverage(src, f"evalplus:{samples}", tasks[:1], known)
    assert len(cov.invalid) == 2 and cov.no_samples == []


def test_codet_source_counts_a_bad_row_as_invalid_unless_strict(tmp_path):
    from acceptgate._util.errors import InvalidInput
    from acceptgate.sources.codet import CodetSource

    prompts = {"T/0": ("def f(x):\n", "f"), "T/1": ("def g(x):\n", "g")}
    path = tmp_path / "codet.jsonl"
    path.write_text("\n".join([json.dumps({"prompt": "def f(x):\n", "samples": ["    return x\n"]}),
                               json.dumps({"prompt": "def g(x):\n", "samples": "not a list"}),
                               json.dumps({"prompt": "def h(x):\n", "samples": []})]) + "\n")
    with pytest.raises(InvalidInput, match="line 2.*'samples'"):
        CodetSource(path, prompts=prompts)
    src = CodetSource(path, prompts=prompts, strict=False)
    assert [(p.line, p.field) for p in src.problems] == [(2, "samples"), (3, "prompt")]
    assert src.available("T/0") == 1 and src.available("T/1") == 0


def test_the_audits_progress_clock_goes_on_from_the_commands_start():
    """The stage lines count from the same start as the lines before them (Prefect's server start): the
    clock never restarts at 0 mid-run."""
    import io
    import re
    import time

    from acceptgate.cli.audit_cmd import StderrProgress

    out = io.StringIO()
    progress = StderrProgress(out, started=time.monotonic() - 42.0)
    progress.stage("import")
    assert float(re.match(r"\[\s*([\d.]+)s\]", out.getvalue()).group(1)) >= 42.0


def test_the_audits_command_lines_and_stage_lines_share_one_clock(capsys):
    """Prefect's server-start line and the stage lines after it both count from the command's start
    (42 s ago here), so no stamp after the first is below it; quiet leaves no reporter."""
    import re
    import time

    from acceptgate.cli.audit_cmd import progress_lines

    say, reporter = progress_lines(False, time.monotonic() - 42.0)
    say("starting a temporary Prefect server")
    reporter.stage("import")
    reporter.progress("import", 3, 3)
    stamps = [float(s) for s in re.findall(r"^\[\s*([\d.]+)s\]", capsys.readouterr().err, re.M)]
    assert len(stamps) == 3 and all(s >= 42.0 for s in stamps), stamps
    assert stamps == sorted(stamps)
    assert progress_lines(True, time.monotonic())[1] is None
