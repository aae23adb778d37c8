"""The documentation: README.md and the MkDocs site in docs/.

Every command of the command line has its page section, every table and view of the migrations its row,
every configuration variable its line; the README stays short with the two commands first; nothing a
user reads names a tracker issue or a work session; every `no-run` marker stands before a fence; and
`mkdocs build --strict` passes. Each check is a function of the text it reads, and each is shown to fail
on a doctored copy.
"""

from __future__ import annotations

import html
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
HOOK_FILE = DOCS / "_hooks" / "acceptgate_docs.py"
TWO_COMMANDS = ("python3 -m pip install -e . && python3 -m acceptgate.cli audit", "bash scripts/test.sh")
README_MAX_LINES = 250
SESSION_REFERENCE = re.compile(r"issue [0-9]|stop [0-9]", re.I)  # = grep -i "issue [0-9]\|stop [0-9]"
SCHEMA_OBJECT = re.compile(r"create\s+(?:or\s+replace\s+)?(?:table|view)\s+(?:if\s+not\s+exists\s+)?([a-z_][a-z0-9_]*)",
                           re.I)
VARIABLE = re.compile(r"(?<![A-Za-z0-9_])ACCEPTGATE_[A-Z][A-Z0-9_]*")
NO_RUN = re.compile(r"^<!-- no-run:(.*?)-->\s*$")


def _hook():
    spec = importlib.util.spec_from_file_location("acceptgate_docs_hook", HOOK_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HOOK = _hook()


def _pages(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(REPO)): p.read_text(encoding="utf-8") for p in sorted(folder.rglob("*.md"))}


# -- the checks: each takes the text it reads and returns what is wrong (empty: nothing) ----------------

def command_paths() -> list[str]:
    """Every command and sub-command of the command line, from the parser it builds."""
    return sorted(HOOK.command_parsers())


def undocumented_commands(pages: dict[str, str], commands: list[str]) -> list[str]:
    """Commands without a heading `acceptgate CMD` and a `<!-- cli: CMD -->` marker in the pages."""
    text = "\n".join(pages.values())
    missing = []
    for command in commands:
        heading = re.search(rf"^#{{1,6}} acceptgate {re.escape(command)}\s*$", text, re.M)
        marker = f"<!-- cli: {command} -->" in text
        if not (heading and marker):
            missing.append(f"{command} ({'no heading' if not heading else 'no cli marker'})")
    return missing


def schema_objects(sql_dir: Path) -> set[str]:
    """Every table and view the migrations and the view files create."""
    files = sorted(sql_dir.glob("*.sql")) + sorted((sql_dir / "views").glob("*.sql"))
    return {m.group(1).lower() for f in files for m in SCHEMA_OBJECT.finditer(f.read_text(encoding="utf-8"))}


def undocumented_tables(page: str, names: set[str]) -> list[str]:
    """Tables and views without a row (`| `name` | ...`) on the warehouse page."""
    rows = set(re.findall(r"^\|\s*`([a-z_][a-z0-9_]*)`\s*\|", page, re.M))
    return sorted(names - rows)


def configuration_variables() -> set[str]:
    """The variables of the settings object's table (when the module exists) and every ACCEPTGATE_ name
    the package, its flows and tasks, and the scripts read."""
    names: set[str] = set()
    if importlib.util.find_spec("acceptgate._util.settings") is not None:
        from acceptgate._util import settings

        names |= set(re.findall(r"^\|\s*([A-Z][A-Z0-9_]+)\s*\|", settings.__doc__ or "", re.M)) - {"variable"}
    for folder in ("acceptgate", "flows", "tasks", "scripts"):
        for path in (REPO / folder).rglob("*"):
            if path.suffix in (".py", ".sh"):
                names |= set(VARIABLE.findall(path.read_text(encoding="utf-8")))
    return names


def undocumented_variables(page: str, names: set[str]) -> list[str]:
    return sorted(n for n in names if f"`{n}`" not in page)


def readme_problems(text: str, root: Path = REPO) -> list[str]:
    problems = []
    lines = text.splitlines()
    if len(lines) > README_MAX_LINES:
        problems.append(f"{len(lines)} lines (at most {README_MAX_LINES})")
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", text, re.M | re.S)
    if not blocks:
        problems.append("no code block")
    else:
        commands = [line.strip() for line in blocks[0].splitlines() if line.strip() and not line.startswith("#")]
        if commands != list(TWO_COMMANDS):
            problems.append(f"the first code block is not the two commands {TWO_COMMANDS}: {commands}")
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if "://" not in target and not (root / target).exists():
            problems.append(f"link to a missing file: {target}")
    return problems


def help_pointing_at_the_readme(helps: dict[str, str]) -> list[str]:
    """Commands whose --help sends the reader to the README: what it would point at lives in the site."""
    return sorted(name for name, text in helps.items() if "README" in text)


def command_helps() -> dict[str, str]:
    return {name: parser.format_help() for name, parser in HOOK.command_parsers().items()}


def session_references(texts: dict[str, str]) -> list[str]:
    return [f"{name}: {m.group(0)!r} in {text[max(0, m.start() - 40):m.end() + 20]!r}"
            for name, text in texts.items() for m in SESSION_REFERENCE.finditer(text)]


def misplaced_no_run_markers(texts: dict[str, str]) -> list[str]:
    """A `<!-- no-run: reason -->` marker must give a reason and stand on the line just before a fence."""
    wrong = []
    for name, text in texts.items():
        lines = text.splitlines()
        for i, line in enumerate(lines):
            m = NO_RUN.match(line)
            if m is None:
                if "no-run" in line and line.lstrip().startswith("<!--"):
                    wrong.append(f"{name}:{i + 1}: malformed marker {line!r}")
                continue
            if not m.group(1).strip():
                wrong.append(f"{name}:{i + 1}: no reason")
            if i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
                wrong.append(f"{name}:{i + 1}: not just before a fence")
    return wrong


def build_site(config: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
                          cwd=config.parent, capture_output=True, text=True, timeout=600,
                          env={**_env(), "NO_MKDOCS_2_WARNING": "1"})


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "DO_NOT_TRACK": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "GX_ANALYTICS_ENABLED": "false"}


def user_texts() -> dict[str, str]:
    texts = {"README.md": (REPO / "README.md").read_text(encoding="utf-8"),
             "CHANGELOG.md": (REPO / "CHANGELOG.md").read_text(encoding="utf-8")}
    texts.update(_pages(DOCS))
    return texts


# -- the tests --------------------------------------------------------------------------------------------

def test_every_command_has_its_section_and_help():
    commands = command_paths()
    assert {"audit", "gate", "sandbox image build", "serve-api new-key", "study ratings"} <= set(commands)
    assert not undocumented_commands(_pages(DOCS / "commands"), commands)


def test_command_check_fails_on_a_doctored_page():
    pages = _pages(DOCS / "commands")
    name = "docs/commands/sandbox.md"
    no_marker = {**pages, name: pages[name].replace("<!-- cli: sandbox image build -->", "")}
    assert undocumented_commands(no_marker, command_paths()) == ["sandbox image build (no cli marker)"]
    no_heading = {**pages, name: pages[name].replace("### acceptgate sandbox cleanup\n", "")}
    assert undocumented_commands(no_heading, command_paths()) == ["sandbox cleanup (no heading)"]


def test_every_table_and_view_has_a_row():
    names = schema_objects(REPO / "sql")
    assert {"runs", "run_attempts", "gate_rates", "leak_hits", "v4v_gates", "seed004_table3",
            "stats_overall_interaction"} <= names and len(names) >= 60
    assert not undocumented_tables((DOCS / "warehouse.md").read_text(encoding="utf-8"), names)


def test_table_check_fails_on_a_doctored_page():
    page = (DOCS / "warehouse.md").read_text(encoding="utf-8")
    doctored = "\n".join(line for line in page.splitlines() if not line.startswith("| `leak_hits` |"))
    assert undocumented_tables(doctored, schema_objects(REPO / "sql")) == ["leak_hits"]


def test_table_check_reads_new_migrations(tmp_path):
    shutil.copytree(REPO / "sql", tmp_path / "sql", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "sql" / "999_new.sql").write_text("create table if not exists brand_new (x int);\n")
    page = (DOCS / "warehouse.md").read_text(encoding="utf-8")
    assert undocumented_tables(page, schema_objects(tmp_path / "sql")) == ["brand_new"]


def test_every_configuration_variable_is_documented():
    names = configuration_variables()
    assert {"ACCEPTGATE_WAREHOUSE", "ACCEPTGATE_CACHE_DIR", "ACCEPTGATE_WAREHOUSE_MEMORY"} <= names
    page = (DOCS / "configuration.md").read_text(encoding="utf-8")
    assert not undocumented_variables(page, names)
    assert undocumented_variables(page.replace("`ACCEPTGATE_WAREHOUSE_MEMORY`", "the memory cap"), names) == [
        "ACCEPTGATE_WAREHOUSE_MEMORY"]


def test_readme_is_short_with_the_two_commands_first():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert not readme_problems(text)


def test_readme_check_fails_on_doctored_copies():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert readme_problems(text + "\n" * 300)[0].endswith(f"(at most {README_MAX_LINES})")
    first = text.index("```sh")
    earlier_block = text[:first] + "```sh\nacceptgate sandbox info\n```\n\n" + text[first:]
    assert readme_problems(earlier_block)[0].startswith("the first code block is not the two commands")
    swapped = text.replace(TWO_COMMANDS[0], "python3 -m cli audit")
    assert readme_problems(swapped)[0].startswith("the first code block is not the two commands")
    assert readme_problems(text.replace("(docs/quickstart.md)", "(docs/no-such-page.md)", 1)) == [
        "link to a missing file: docs/no-such-page.md"]


def test_no_help_points_at_the_readme():
    helps = command_helps()
    assert len(helps) > 20
    assert help_pointing_at_the_readme(helps) == []


def test_readme_pointer_check_fails_on_a_doctored_help():
    helps = command_helps()
    helps["sql"] += "\nTables and views: sql/README.md."
    assert help_pointing_at_the_readme(helps) == ["sql"]


def test_nothing_a_user_reads_names_an_issue_or_a_work_session():
    assert not session_references(user_texts())


def test_session_check_fails_on_a_doctored_page():
    texts = user_texts()
    texts["docs/gates.md"] += "\nMeasured in stop 46 (issue 25).\n"
    assert len(session_references(texts)) == 2


def test_no_run_markers_stand_before_a_fence():
    texts = user_texts()
    assert sum(text.count("<!-- no-run:") for text in texts.values()) >= 10
    assert not misplaced_no_run_markers(texts)
    page = texts["docs/commands/services.md"]
    texts["docs/commands/services.md"] = page.replace("<!-- no-run: a server that runs until stopped -->\n```sh",
                                                      "<!-- no-run: a server that runs until stopped -->\n\n```sh", 1)
    texts["docs/quickstart.md"] += "\n<!-- no-run: -->\n```sh\ntrue\n```\n<!--no-run because -->\n"
    assert [w.split(": ", 1)[1] for w in misplaced_no_run_markers(texts)] == [
        "not just before a fence", "no reason", "malformed marker '<!--no-run because -->'"]


def test_hook_expands_the_markers():
    from acceptgate.sandbox.threat import THREAT_MODEL

    assert THREAT_MODEL.rstrip() in HOOK.expand("<!-- threat-model -->\n")
    rows = HOOK.exit_code_rows((DOCS / "commands" / "index.md").read_text(encoding="utf-8"))
    block = HOOK.expand("<!-- cli: spec check -->\n", rows)
    assert "usage: acceptgate spec check" in block and "| bad record | 2, nothing written |" in block
    with pytest.raises(HOOK.MarkerError, match="no command 'acceptgate spec lint'"):
        HOOK.expand("<!-- cli: spec lint -->\n")
    with pytest.raises(HOOK.MarkerError, match="no file"):
        HOOK.expand("<!-- include: docs/no-such-file.md -->\n")
    judge_formats = HOOK.expand("<!-- include: data/demo/judge/README.md shift=3 -->\n")
    assert judge_formats.startswith("#### Over-defence judge")


def _site_text(site: Path) -> dict[str, str]:
    return {str(p.relative_to(site)): html.unescape(re.sub(r"<[^>]+>", "", p.read_text(encoding="utf-8")))
            for p in site.rglob("*.html")}


def test_mkdocs_build_strict(tmp_path):
    pytest.importorskip("mkdocs", reason="mkdocs is not installed: pip install -e '.[docs]' (the test extra has it)")
    pytest.importorskip("material", reason="mkdocs-material is not installed: pip install -e '.[docs]'")
    from acceptgate.sandbox.threat import THREAT_MODEL

    out = build_site(REPO / "mkdocs.yml", tmp_path / "site")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    texts = _site_text(tmp_path / "site")
    assert THREAT_MODEL.splitlines()[0] in texts["sandbox/index.html"]
    assert THREAT_MODEL.splitlines()[-1] in texts["sandbox/index.html"]
    built = "\n".join(texts.values())
    missing_help = [c for c in command_paths() if f"usage: acceptgate {c} " not in built]
    assert not missing_help
    assert not session_references(texts)
    assert (tmp_path / "site" / "scale.png").is_file()


def test_mkdocs_build_fails_on_a_broken_link(tmp_path):
    pytest.importorskip("mkdocs", reason="mkdocs is not installed: pip install -e '.[docs]' (the test extra has it)")
    pytest.importorskip("material", reason="mkdocs-material is not installed: pip install -e '.[docs]'")
    copy = tmp_path / "repo"
    shutil.copytree(DOCS, copy / "docs", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("mkdocs.yml", "CHANGELOG.md", "data/demo/judge/README.md"):
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, copy / name)
    with (copy / "docs" / "gates.md").open("a", encoding="utf-8") as f:
        f.write("\nSee [the arms](v4v.md#no-such-section).\n")
    out = build_site(copy / "mkdocs.yml", tmp_path / "site")
    assert out.returncode != 0
    assert "no-such-section" in out.stdout + out.stderr
