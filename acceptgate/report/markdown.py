"""The report's summary as markdown (the Prefect artifact attached to each scheduled flow run)."""

from __future__ import annotations

import pandas as pd

from acceptgate.report.data import ReportData, false_delivery_display


def _cell(value) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def table(frame: pd.DataFrame, max_rows: int = 20) -> str:
    if frame.empty:
        return "_no rows_"
    cols = list(frame.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for rec in frame.head(max_rows).itertuples(index=False):
        lines.append("| " + " | ".join(_cell(v) for v in rec) + " |")
    if len(frame) > max_rows:
        lines.append(f"\n_{len(frame) - max_rows} more rows in the warehouse_")
    return "\n".join(lines)


def summary(data: ReportData, header: list[str] | None = None) -> str:
    out = ["# acceptgate summary", ""]
    if header:
        out += ["```", *header, "```", ""]
    out.append(f"Snapshot `{data.snapshot.name}`, published {data.published_at}.")
    for section in data.sections:
        out += ["", f"## {section.title}", ""]
        if not section.ran:
            out.append(f"_{section.note}_")
            continue
        for caption, frame in section.tables.items():
            shown = false_delivery_display(frame) if section.key == "false-delivery" else frame
            out += [f"**{caption}**", "", table(shown), ""]
        out += [f"_{note}_" for note in section.notes]
        if section.queries:
            out += ["", "Detail: " + "; ".join(f'`acceptgate sql "{sql}"`' for _, sql in section.queries[:2])]
    return "\n".join(out) + "\n"
