"""The report's summary as markdown (the Prefect artifact attached to each scheduled flow run).

Every value from the warehouse (a candidate's answer, a harness message, a run's source) and every line
the caller passes is shown as literal code: an inline code span, or a fenced block, whose fence is longer
than any run of backticks in the text, so no text can end it early and become a link, an image or raw
HTML in the viewer (Prefect's UI renders artifacts with marked). Our own words (titles, captions, notes)
are backslash-escaped instead, which keeps them plain text too."""

from __future__ import annotations

import numbers
import re

import pandas as pd

from acceptgate.report.data import ReportData, false_delivery_display

_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")  # every ASCII punctuation character: CommonMark escapes them all
_PIPE = re.compile(r"(\\*)\|")


def text(value) -> str:
    """Plain text in markdown: every ASCII punctuation character backslash-escaped (no emphasis, link,
    autolink, HTML or table cell boundary can form), line breaks as spaces."""
    return _PUNCTUATION.sub(r"\\\1", _one_line(value))


def code(value) -> str:
    """An inline code span showing ``value`` literally (one line)."""
    body = _one_line(value)
    if not body:
        return ""
    fence = "`" * (_longest_backtick_run(body) + 1)
    # a space on both sides is dropped by the renderer: needed when the text begins or ends with a
    # backtick (it would join the fence) or with spaces on both sides (one of each would be dropped)
    pad = " " if body[0] == "`" or body[-1] == "`" or (body[0] == " " and body[-1] == " ") else ""
    return f"{fence}{pad}{body}{pad}{fence}"


def code_block(lines: list[str]) -> list[str]:
    """A fenced code block showing ``lines`` literally: its fence is longer than any backtick run inside."""
    body = [str(line).replace("\r", " ") for line in lines]
    body = [part for line in body for part in line.split("\n")]
    fence = "`" * max(3, max((_longest_backtick_run(line) for line in body), default=0) + 1)
    return [fence, *body, fence]


def _one_line(value) -> str:
    return re.sub(r"[\r\n]+", " ", str(value))


def _longest_backtick_run(body: str) -> int:
    return max((len(run) for run in re.findall(r"`+", body)), default=0)


def _table_safe(cell: str) -> str:
    """A table cell's pipes escaped with an odd number of backslashes (marked and GFM then keep them in
    the cell; a pipe after an odd count of the text's own backslashes would otherwise end the cell)."""
    return _PIPE.sub(lambda m: m.group(1) * 2 + "\\|", cell)


def _cell(value) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, numbers.Number) and not isinstance(value, bool):
        return str(value)
    return _table_safe(code(value))


def table(frame: pd.DataFrame, max_rows: int = 20) -> str:
    if frame.empty:
        return "_no rows_"
    cols = list(frame.columns)
    lines = ["| " + " | ".join(text(c) for c in cols) + " |", "|" + "---|" * len(cols)]
    for rec in frame.head(max_rows).itertuples(index=False):
        lines.append("| " + " | ".join(_cell(v) for v in rec) + " |")
    if len(frame) > max_rows:
        lines.append(f"\n_{len(frame) - max_rows} more rows in the warehouse_")
    return "\n".join(lines)


def summary(data: ReportData, header: list[str] | None = None) -> str:
    out = ["# acceptgate summary", ""]
    if header:
        out += [*code_block(header), ""]
    out.append(f"Snapshot {code(data.snapshot.name)}, published {text(data.published_at)}.")
    for section in data.sections:
        out += ["", f"## {text(section.title)}", ""]
        if not section.ran:
            out.append(f"_{text(section.note)}_")
            continue
        for caption, frame in section.tables.items():
            shown = false_delivery_display(frame) if section.key == "false-delivery" else frame
            out += [f"**{text(caption)}**", "", table(shown), ""]
        out += [f"_{text(note)}_" for note in section.notes]
        if section.queries:
            out += ["", "Detail: " + "; ".join(code(f'acceptgate sql "{sql}"') for _, sql in section.queries[:2])]
    return "\n".join(out) + "\n"
