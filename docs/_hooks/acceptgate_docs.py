"""MkDocs hook: the parts of the site that are generated from the code at build time, so they cannot go stale.

Markers, each an HTML comment alone on its line in a page's markdown:

- ``<!-- cli: sandbox image build -->``: that command's ``--help`` text (from the argparse parser the
  command line builds) and its row of the exit-code table in ``commands/index.md``.
- ``<!-- threat-model -->``: ``acceptgate.sandbox.threat.THREAT_MODEL``, the text ``acceptgate sandbox info``
  prints.
- ``<!-- include: PATH [shift=N] -->``: a file of the repository (PATH relative to the repository root),
  its markdown headings moved N levels down.

The functions below take text and return text, so tests can call them without a build.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^<!-- (cli|threat-model|include)(?::\s*(.*?))?\s*-->\s*$", re.M)
EXIT_TABLE_MARK = "<!-- exit-code-table"
FAILURE_CLASSES = ("missing file", "bad record", "unwritable output", "backend unavailable", "lock held")
HELP_COLUMNS = "100"


class MarkerError(ValueError):
    """A marker the hook cannot expand (unknown command, missing file)."""


@functools.cache
def _parser():
    from acceptgate.cli import build_parser

    return build_parser()


def _help(parser) -> str:
    """The parser's help at a fixed width (argparse wraps to the terminal's, read from COLUMNS)."""
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_COLUMNS
    try:
        return parser.format_help().rstrip()
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved


def command_parsers() -> dict[str, object]:
    """Every command path of the command line ("spec", "spec check", ...) -> its argparse parser."""
    found: dict[str, object] = {}

    def walk(parser, prefix: tuple[str, ...]) -> None:
        if prefix:
            found[" ".join(prefix)] = parser
        for action in parser._subparsers._group_actions if parser._subparsers else []:
            for name, sub in action.choices.items():
                walk(sub, prefix + (name,))

    walk(_parser(), ())
    return found


def exit_code_rows(page: str) -> dict[str, dict[str, str]]:
    """The exit-code table of the commands overview: command -> failure class -> cell text."""
    lines = page.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(EXIT_TABLE_MARK)), None)
    if start is None:
        return {}
    rows = {}
    for line in lines[start + 3:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rows[cells[0].strip("`")] = dict(zip(FAILURE_CLASSES, cells[2:]))
    return rows


@functools.cache
def _exit_rows() -> dict[str, dict[str, str]]:
    return exit_code_rows((REPO / "docs" / "commands" / "index.md").read_text(encoding="utf-8"))


def cli_block(command: str, rows: dict[str, dict[str, str]] | None = None) -> str:
    parsers = command_parsers()
    if command not in parsers:
        raise MarkerError(f"no command 'acceptgate {command}' (known: {', '.join(sorted(parsers))})")
    text = f"```text\n{_help(parsers[command])}\n```\n"
    row = (_exit_rows() if rows is None else rows).get(command)
    if row:
        cells = [(cls, cell) for cls, cell in row.items() if cell != "—"]
        if cells:
            text += "\n| failure | exit code, what is left on disk |\n| --- | --- |\n"
            text += "".join(f"| {cls} | {cell} |\n" for cls, cell in cells)
            text += "\nExit 0 when done, whatever the verdicts; 130 / 143 when stopped by SIGINT / SIGTERM " \
                    "([exit codes](index.md#exit-codes)).\n"
    return text


def threat_block() -> str:
    from acceptgate.sandbox.threat import THREAT_MODEL

    return f"```text\n{THREAT_MODEL.rstrip()}\n```\n"


def include_block(argument: str) -> str:
    parts = argument.split()
    if not parts:
        raise MarkerError("include: no path")
    path, shift = REPO / parts[0], 0
    for option in parts[1:]:
        if not option.startswith("shift="):
            raise MarkerError(f"include: unknown option {option!r}")
        shift = int(option.removeprefix("shift="))
    if not path.is_file():
        raise MarkerError(f"include: no file {parts[0]}")
    text, fenced, out = path.read_text(encoding="utf-8"), False, []
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and shift and re.match(r"#{1,6} ", line):
            line = "#" * shift + line
        out.append(line)
    return "\n".join(out) + "\n"


def expand(markdown: str, rows: dict[str, dict[str, str]] | None = None) -> str:
    """A page's markdown with every marker replaced by what it names."""
    def one(match: re.Match) -> str:
        kind, argument = match.group(1), (match.group(2) or "").strip()
        if kind == "cli":
            return cli_block(argument, rows)
        if kind == "threat-model":
            return threat_block()
        return include_block(argument)

    return MARKER.sub(one, markdown)


def on_page_markdown(markdown, page, config, files):  # noqa: ARG001 (MkDocs' hook signature)
    try:
        return expand(markdown)
    except MarkerError as exc:
        from mkdocs.exceptions import PluginError

        raise PluginError(f"{page.file.src_path}: {exc}") from None
