"""The report's one kind of chart, an interval chart, as inline SVG text: one row per label, its value as
a bar from zero (or a point, on a zero-centred scale) and its interval as a whisker.

Written here rather than drawn with a plotting library: it is a few dozen lines, the page stays
offline and self-contained, and acceptgate's install needs no plotting stack (about 100 MB). The
scale always holds every value and interval end, so nothing is drawn outside the frame: the given
range is widened to the data, and the ends are padded by a marker's width.
"""

from __future__ import annotations

import html
import math

import pandas as pd

ROW = 22  # px per row
LABEL_CHAR = 6.2  # px per character of a label at 11 px (system-ui): the label column's width
PLOT = 260  # px of the plot area
PAD = 6  # px beyond the scale's ends: a point or cap at an end stays whole
TOP, AXIS = 8, 34  # px above the first row; px below the last row for the ticks and the axis label


def _ticks(lo: float, hi: float) -> list[float]:
    """About five round ticks between lo and hi."""
    span = hi - lo
    raw = span / 5
    step = 10 ** math.floor(math.log10(raw))
    step *= next(m for m in (1, 2, 2.5, 5, 10) if raw <= step * m)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]


def _fmt(x: float) -> str:
    return f"{x:g}"


def interval_chart(frame: pd.DataFrame, *, xlabel: str, xlim: tuple[float, float], zero_line: bool) -> str:
    """``frame``: columns label, value, low, high (rows without a value are left out by the caller)."""
    value = frame["value"].astype(float).tolist()
    low = [min(v, l) for v, l in zip(value, frame["low"].astype(float).fillna(frame["value"]))]
    high = [max(v, h) for v, h in zip(value, frame["high"].astype(float).fillna(frame["value"]))]
    lo = min([xlim[0], *low] + ([0.0] if not zero_line else []))
    hi = max([xlim[1], *high])
    if hi <= lo:
        hi = lo + 1.0
    labels = [str(x) for x in frame["label"]]
    left = int(max(len(s) for s in labels) * LABEL_CHAR) + 12
    width, height = left + PLOT + 2 * PAD + 8, TOP + ROW * len(labels) + AXIS

    def x(v: float) -> float:
        return round(left + PAD + (v - lo) / (hi - lo) * PLOT, 1)

    bottom = TOP + ROW * len(labels)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" role="img" '
           f'font-family="system-ui, sans-serif" font-size="11">']
    for t in _ticks(lo, hi):
        out.append(f'<line x1="{x(t)}" y1="{TOP}" x2="{x(t)}" y2="{bottom}" stroke="#eee"/>'
                   f'<text x="{x(t)}" y="{bottom + 13}" text-anchor="middle" fill="#444">{_fmt(t)}</text>')
    if zero_line and lo < 0 < hi:
        out.append(f'<line x1="{x(0)}" y1="{TOP}" x2="{x(0)}" y2="{bottom}" stroke="#888"/>')
    for i, (label, v, l, h) in enumerate(zip(labels, value, low, high)):
        y = TOP + ROW * i + ROW / 2
        out.append(f'<text x="{left - 6}" y="{y + 4}" text-anchor="end">{html.escape(label)}</text>')
        if zero_line:
            out.append(f'<circle cx="{x(v)}" cy="{y}" r="3.5" fill="#1f5f8b"/>')
        else:
            base = max(lo, 0.0)
            out.append(f'<rect x="{min(x(base), x(v))}" y="{y - 7}" width="{abs(x(v) - x(base))}" height="14" '
                       'fill="#c0504d"/>')
        out.append(f'<path d="M{x(l)} {y}H{x(h)}M{x(l)} {y - 4}V{y + 4}M{x(h)} {y - 4}V{y + 4}" stroke="#222" '
                   f'fill="none"><title>{html.escape(label)}: {_fmt(v)} [{_fmt(l)}, {_fmt(h)}]</title></path>')
    out.append(f'<line x1="{left}" y1="{bottom}" x2="{left + PLOT + 2 * PAD}" y2="{bottom}" stroke="#444"/>'
               f'<text x="{left + PAD + PLOT / 2}" y="{bottom + 28}" text-anchor="middle">{html.escape(xlabel)}</text>'
               "</svg>")
    return "".join(out)
