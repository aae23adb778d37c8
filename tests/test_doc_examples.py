"""Every command example in the documentation runs as written (docs/contributing.md, "Command examples").

Each fenced ``sh`` block of README.md and of the site's pages, in the site's navigation order (README
first), top to bottom, line by line, with bash, in one working copy per part (``PARTS``): a temporary
directory that holds the repository's files (linked, so nothing in the checkout changes) with a fresh
``data/`` (its demo inputs linked), and ``../shared`` beside it. A block marked ``<!-- no-run: why -->``
is skipped; every other line must exit 0. The installed ``acceptgate`` is first on the PATH."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from conftest import shared_data_dir

REPO = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
NO_RUN = re.compile(r"<!--\s*no-run:\s*[^>]*\S[^>]*-->\s*$")


@dataclass(frozen=True)
class Example:
    page: str
    line: int  # of the command, 1-based
    command: str


def pages(root: Path = REPO) -> list[Path]:
    """README.md, then the site's pages in navigation order."""
    config = yaml.safe_load((root / "mkdocs.yml").read_text())
    found: list[str] = []

    def walk(node) -> None:
        if isinstance(node, str):
            found.append(node)
        elif isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            for value in node.values():
                walk(value)

    walk(config["nav"])
    return [root / "README.md"] + [root / "docs" / p for p in found if p.endswith(".md")]


def examples(text: str, page: str) -> list[Example]:
    """The command lines of a page's runnable ``sh`` blocks (comments and blank lines dropped)."""
    out = []
    for fence in FENCE.finditer(text):
        if fence.group(1) != "sh":
            continue
        before = text[: fence.start()].rstrip("\n").rsplit("\n", 1)[-1]
        if NO_RUN.search(before):
            continue
        first = text.count("\n", 0, fence.start(2)) + 1
        for offset, line in enumerate(fence.group(2).splitlines()):
            command = line.strip()
            if command and not command.startswith("#"):
                out.append(Example(page, first + offset, command))
    return out


def all_examples(root: Path = REPO) -> list[Example]:
    return [e for page in pages(root) for e in examples(page.read_text(), str(page.relative_to(root)))]


def working_copy(tmp: Path, root: Path = REPO) -> Path:
    """``tmp/repo``: every top-level entry of the checkout linked, but a fresh data/ (its demo inputs
    linked); ``tmp/shared`` -> the shared data's parent, so ``../shared/data`` resolves."""
    copy = tmp / "repo"
    copy.mkdir()
    for entry in root.iterdir():
        if entry.name not in ("data", ".git", "site") and not entry.name.startswith(".venv"):
            (copy / entry.name).symlink_to(entry)
    (copy / "data").mkdir()
    (copy / "data" / "demo").symlink_to(root / "data" / "demo")
    (tmp / "shared").symlink_to(shared_data_dir().parent)
    return copy


def test_the_example_parser_skips_no_run_blocks_and_comments():
    text = ("Intro\n\n```sh\n# a comment\nacceptgate spec check x.json\n\nacceptgate sql \"select 1\"\n```\n\n"
            "<!-- no-run: a server -->\n```sh\nacceptgate serve\n```\n\n```text\nacceptgate not a command\n```\n"
            "<!-- no-run -->\n```sh\nacceptgate audit\n```\n")
    found = examples(text, "p.md")
    # an unexplained marker does not count: the block runs
    assert [(e.line, e.command) for e in found] == [(5, "acceptgate spec check x.json"),
                                                     (7, 'acceptgate sql "select 1"'), (20, "acceptgate audit")]


def test_the_docs_have_examples_and_every_page_in_the_nav_exists():
    found = all_examples()
    assert len(found) >= 20 and all(p.is_file() for p in pages())
    assert {e.page for e in found} >= {"README.md", "docs/quickstart.md"}


# The examples in three parts (the two larger of about the same CPU), each in a working copy of its own
# so that they run side by side (a file each: pytest-xdist's --dist loadfile gives each file a worker).
# A page belongs to the first part that names it (a prefix of its path); "pages" also has every page no
# part names. Each part makes its own inputs: the suite and experiment command pages import what they use; the leak page
# imports and certifies before it gates, in the same commands as the V4V page after it (so they run
# once); the README, the quickstart and the other command pages build on the quickstart.
PARTS = (
    ("own-inputs", ("docs/commands/suites.md", "docs/commands/experiment.md")),
    ("pages", ("docs/commands/leak.md",)),
    ("main", ("README.md", "docs/quickstart.md", "docs/commands/")),
)
PART_NAMES = ("main", "own-inputs", "pages")


def part_of(page: str) -> str:
    return next((name for name, prefixes in PARTS if page.startswith(prefixes)), "pages")


def part(found: list[Example], name: str) -> list[Example]:
    """The examples of one part, in navigation order."""
    return [e for e in found if part_of(e.page) == name]


def environment() -> dict[str, str]:
    """A user's environment: no warehouse override, no PYTHONPATH, the installed ``acceptgate`` first."""
    env = {k: v for k, v in os.environ.items() if k not in ("ACCEPTGATE_WAREHOUSE", "PYTHONPATH")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    return env


def run_one(example: Example, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """One example, as a user's shell would run it."""
    return subprocess.run(["bash", "-o", "pipefail", "-c", example.command], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)


def to_run(found: list[Example]) -> list[Example]:
    """The examples in order, without a command that already ran as written in the same working copy
    (the README's block is the quickstart's): it would do the same work over the same files."""
    seen: set[str] = set()
    return [e for e in found if not (e.command in seen or seen.add(e.command))]


def run(found: list[Example], cwd: Path) -> list[str]:
    """Each example in order (``to_run``); what failed, with its page and line."""
    env, failures = environment(), []
    for example in to_run(found):
        done = run_one(example, cwd, env)
        if done.returncode != 0:
            failures.append(f"{example.page}:{example.line}: `{example.command}` exited {done.returncode}: "
                            f"{(done.stderr or done.stdout)[-1500:]}")
    return failures


def test_the_parts_share_out_every_example():
    found = all_examples()
    parts = {name: part(found, name) for name in PART_NAMES}
    assert sorted((e for p in parts.values() for e in p), key=found.index) == found
    assert all(parts.values())
    assert part_of("docs/commands/leak.md") == "pages" and part_of("docs/commands/gate-new.md") == "main"
    assert part_of("docs/new-concept.md") == "pages" and part_of("README.md") == "main"


def test_every_documented_command_runs_as_written(tmp_path):
    """The README, the quickstart and the command pages that build on them (the others:
    test_doc_examples_commands.py, test_doc_examples_pages.py)."""
    found = part(all_examples(), "main")
    assert {"README.md", "docs/quickstart.md", "docs/commands/certify.md"} <= {e.page for e in found}
    failures = run(found, working_copy(tmp_path))
    assert failures == [], "\n\n".join(failures)


def test_a_failing_example_is_reported_with_its_place(tmp_path):
    page = tmp_path / "docs" / "bad.md"
    page.parent.mkdir()
    page.write_text("Text.\n\n```sh\ntrue\nls no-such-file\n```\n")
    (tmp_path / "README.md").write_text("# x\n")
    (tmp_path / "mkdocs.yml").write_text("nav:\n  - Bad: bad.md\n")
    found = all_examples(tmp_path)
    assert found == [Example("docs/bad.md", 4, "true"), Example("docs/bad.md", 5, "ls no-such-file")]
    (failure,) = run(found + [Example("docs/bad.md", 6, "ls no-such-file")], tmp_path)  # run once
    assert failure.startswith("docs/bad.md:5: `ls no-such-file` exited 2")
