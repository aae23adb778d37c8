"""The report as one self-contained HTML page: inline CSS, tables, and charts as inline SVG (``svg.py``;
offline, no JavaScript, no external fonts or files). Every section is drawn the same way:
summary tables, charts, notes (caveats, truncation), then the ``acceptgate sql`` queries for the detail.
Readable on a phone: wide tables scroll inside their box, charts scale to the width."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from acceptgate._util import outputs
from acceptgate.report.data import Chart, ReportData, Section, false_delivery_display
from acceptgate.report.svg import interval_chart

CSS = """
body { font-family: system-ui, sans-serif; margin: 1em auto; max-width: 72em; padding: 0 1em; color: #222;
       line-height: 1.4; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 2em; }
h3 { font-size: 1em; margin-bottom: .2em; }
nav { display: flex; flex-wrap: wrap; gap: .2em 1em; } nav a { white-space: nowrap; }
table { border-collapse: collapse; margin: .3em 0 1em; font-size: .85em; }
th, td { border: 1px solid #ddd; padding: .25em .6em; text-align: right; vertical-align: top; }
td { white-space: nowrap; } /* a narrow screen scrolls the table's box rather than breaking ids */
th { background: #f4f4f4; } td.text { text-align: left; }
td.long { white-space: normal; min-width: 12em; max-width: 28em; overflow-wrap: anywhere; }
td.mid { white-space: normal; overflow-wrap: anywhere; min-width: 8em; } /* paths, ids: wrap at 1200 px */
.wide { overflow-x: auto; max-width: 100%; }
.note { color: #666; font-style: italic; } .caveat { background: #fff4e5; border-left: 4px solid #e69500;
        padding: .4em .8em; margin: .5em 0; }
figure { margin: 0 0 1.2em; max-width: 30em; } figure svg { width: 100%; height: auto; }
figcaption { font-size: .85em; color: #555; }
details { margin: .5em 0 1em; } code { font-size: .85em; overflow-wrap: anywhere; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f7f7f7; padding: .4em .6em; margin: .2em 0 .6em; }
"""

NOT_RUN = "not run yet"  # a section's note when nothing of it is published: such sections share one line
MAX_CELL = 200  # characters of one cell: a program or message is cut, and says so


def _cell(value) -> str:
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)) and getattr(value, "ndim", 0):
        value = value.tolist()  # a list column (e.g. leak_verdicts.reasons) arrives as an array
    if value is None or (not isinstance(value, (list, tuple, dict)) and pd.isna(value)):
        return "<td></td>"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:  # a sum over integers arrives as a float
            return f"<td>{int(value):,}</td>"
        return f"<td>{value:.4g}</td>"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10_000:
        return f"<td>{value:,}</td>"
    if isinstance(value, (int, bool)):
        return f"<td>{html.escape(str(value))}</td>"
    text = str(value)
    if len(text) > MAX_CELL:
        text = text[:MAX_CELL] + f"… ({len(text) - MAX_CELL} more characters)"
    width = " long" if len(text) > 40 else " mid" if len(text) > 16 else ""  # ids, rates with intervals: wrap
    return f'<td class="text{width}">{html.escape(text)}</td>'


def table(frame: pd.DataFrame) -> str:
    if frame.empty:
        return '<p class="note">no rows</p>'
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    rows = "".join("<tr>" + "".join(_cell(v) for v in rec) + "</tr>" for rec in frame.itertuples(index=False))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def chart(spec: Chart) -> str | None:
    """Each row's value with its interval as a horizontal bar (or a point at zero-centred scales)."""
    frame = spec.frame.dropna(subset=["value"])
    if frame.empty:
        return None
    svg = interval_chart(frame, xlabel=spec.xlabel, xlim=spec.xlim, zero_line=spec.zero_line)
    return f"<figure>{svg}<figcaption>{html.escape(spec.caption)}</figcaption></figure>"


def section(sec: Section) -> str:
    out = [f'<section id="{sec.key}"><h2>{html.escape(sec.title)}</h2>']
    if not sec.ran:
        out.append(f'<p class="note">{html.escape(sec.note)}</p>')
    else:
        tables = list(sec.tables.items())
        for i, (caption, frame) in enumerate(tables):
            shown = false_delivery_display(frame) if sec.key == "false-delivery" else frame
            out.append(f'<h3>{html.escape(caption)}</h3><div class="wide">{table(shown)}</div>')
            if i == 0:  # the chart right under the summary it draws
                out += [c for c in (chart(spec) for spec in sec.charts) if c]
        for caption, frame in sec.more.items():  # other runs, folded: open the one wanted
            out.append(f'<details class="run"><summary>{html.escape(caption)}</summary>'
                       f'<div class="wide">{table(frame)}</div></details>')
        for note in sec.notes:
            cls = "caveat" if "DEMONSTRATION" in note else "note"
            out.append(f'<p class="{cls}">{html.escape(note)}</p>')
    if sec.queries:
        items = "".join(f"<li>{html.escape(what)}:<pre>acceptgate sql \"{html.escape(sql)}\"</pre></li>"
                        for what, sql in sec.queries)
        out.append(f"<details><summary>the detail, with <code>acceptgate sql</code></summary><ul>{items}</ul></details>")
    out.append("</section>")
    return "\n".join(out)


def not_run(sections: list[Section]) -> str:
    """The sections with nothing published yet, in one line (each keeps its anchor)."""
    if not sections:
        return ""
    names = ", ".join(f'<span id="{s.key}">{html.escape(s.title)}</span>' for s in sections)
    hints = dict.fromkeys(s.note.removeprefix(NOT_RUN).strip(" ()") for s in sections if s.note != NOT_RUN)
    how = f" (to fill them: {html.escape('; '.join(hints))})" if hints else ""
    return (f'<section id="not-run"><h2>Not run yet ({len(sections)} sections)</h2>'
            f'<p class="note">{names}{how}</p></section>')


def page(data: ReportData) -> str:
    shown = [s for s in data.sections if s.ran or not s.note.startswith(NOT_RUN)]
    idle = [s for s in data.sections if s not in shown]
    body = "\n".join(section(s) for s in shown) + "\n" + not_run(idle)
    nav = " ".join(f'<a href="#{s.key}">{html.escape(s.title)}</a>' for s in shown)
    if idle:
        nav += f' <a href="#not-run">not run yet ({len(idle)})</a>'
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>acceptgate report</title>'
            f"<style>{CSS}</style></head><body><h1>acceptgate report</h1>"
            f"<p>From the published snapshot <code>{html.escape(data.snapshot.name)}</code>, "
            f"published {html.escape(data.published_at)}. Each section: its summary first, then the queries "
            f"for the detail.</p><nav>{nav}</nav>\n{body}\n</body></html>\n")


def write(text: str, out: Path) -> Path:
    """Atomically: a temporary file beside ``out``, then rename."""
    return outputs.write_atomic(out, text)
