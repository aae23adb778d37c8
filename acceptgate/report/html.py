"""The report as one self-contained HTML page: inline CSS, tables, and charts as inline SVG drawn by
matplotlib (offline, no JavaScript, no external fonts or files)."""

from __future__ import annotations

import html
import io
from pathlib import Path

import pandas as pd

from acceptgate import outputs
from acceptgate.report.data import ReportData, false_delivery_display, Section

CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 72em; color: #222; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 2em; }
table { border-collapse: collapse; margin: .5em 0 1.5em; font-size: .85em; }
th, td { border: 1px solid #ddd; padding: .25em .6em; text-align: right; }
th { background: #f4f4f4; } td.text { text-align: left; }
.wide { overflow-x: auto; }
.note { color: #777; font-style: italic; } figure { margin: 0 0 1.5em; } figcaption { font-size: .85em; color: #555; }
"""


def _cell(value) -> str:
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)) and getattr(value, "ndim", 0):
        value = value.tolist()  # a list column (e.g. leak_verdicts.reasons) arrives as an array
    if value is None or (not isinstance(value, (list, tuple, dict)) and pd.isna(value)):
        return "<td></td>"
    if isinstance(value, float):
        return f"<td>{value:.4g}</td>"
    if isinstance(value, (int, bool)):
        return f"<td>{html.escape(str(value))}</td>"
    return f'<td class="text">{html.escape(str(value))}</td>'


def table(frame: pd.DataFrame) -> str:
    if frame.empty:
        return '<p class="note">no rows</p>'
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    rows = "".join("<tr>" + "".join(_cell(v) for v in rec) + "</tr>" for rec in frame.itertuples(index=False))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})  # same data, same bytes
    text = buf.getvalue()
    return text[text.index("<svg"):]  # drop the XML prolog and DOCTYPE: the SVG is inline in HTML


def false_delivery_chart(frame: pd.DataFrame) -> str | None:
    """False delivery over all tasks, per arm of the latest gate run, with its Wilson 95% interval."""
    if frame.empty:
        return None
    import matplotlib

    matplotlib.use("svg")  # no display, no GUI toolkit
    import matplotlib.pyplot as plt

    latest = frame[frame["run_id"] == frame["run_id"].iloc[0]]
    rate = latest["false_over_all"].astype(float) * 100
    low = rate - latest["all_ci_low"].astype(float) * 100
    high = latest["all_ci_high"].astype(float) * 100 - rate
    fig, ax = plt.subplots(figsize=(6, 0.6 + 0.5 * len(latest)))
    ax.barh(latest["arm"], rate, xerr=[low, high], color="#c0504d", capsize=4)
    ax.set_xlim(0, 100)
    ax.set_xlabel("false deliveries, % of all tasks (95% Wilson interval)")
    ax.invert_yaxis()
    fig.tight_layout()
    svg = _svg(fig)
    plt.close(fig)
    return f'<figure>{svg}<figcaption>gate run {html.escape(str(latest["run_id"].iloc[0]))}</figcaption></figure>'


def section(sec: Section) -> str:
    out = [f'<section id="{sec.key}"><h2>{html.escape(sec.title)}</h2>']
    if not sec.ran:
        out.append(f'<p class="note">{html.escape(sec.note)}</p>')
    else:
        if sec.key == "false-delivery":
            chart = false_delivery_chart(next(iter(sec.tables.values())))
            if chart:
                out.append(chart)
        for caption, frame in sec.tables.items():
            shown = false_delivery_display(frame) if sec.key == "false-delivery" else frame
            out.append(f'<h3>{html.escape(caption)}</h3><div class="wide">{table(shown)}</div>')
    out.append("</section>")
    return "\n".join(out)


def page(data: ReportData) -> str:
    body = "\n".join(section(s) for s in data.sections)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>acceptgate report</title>'
            f"<style>{CSS}</style></head><body><h1>acceptgate report</h1>"
            f"<p>From the published snapshot <code>{html.escape(data.snapshot.name)}</code>, "
            f"published {html.escape(data.published_at)}.</p>\n{body}\n</body></html>\n")


def write(text: str, out: Path) -> Path:
    """Atomically: a temporary file beside ``out``, then rename."""
    return outputs.write_atomic(out, text)
