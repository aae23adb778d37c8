"""Tidy frames (one row per config, unit, condition, run) to ``PairedData``, with validation.

Missing cells are an error naming the configuration, unit and condition: a silently dropped unit
would change the denominator.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from acceptgate.stats.paired import PairedData


class IncompleteDesign(ValueError):
    """A unit lacks a condition or a run, or a cell appears twice."""


def paired_from_tidy(frame: pd.DataFrame, *, conditions: tuple[str, str], config: str = "config",
                     unit: str = "unit", condition: str = "condition", run: str = "run", value: str = "value",
                     unit_name: str = "units") -> list[PairedData]:
    """One PairedData per configuration (in order of first appearance). ``conditions`` = (a, b);
    Delta = b - a. Rows with other conditions are ignored."""
    missing = [c for c in (config, unit, condition, run, value) if c not in frame.columns]
    if missing:
        raise IncompleteDesign(f"frame lacks columns {missing}")
    a_name, b_name = conditions
    rows = frame[frame[condition].isin(conditions)]
    dup = rows.duplicated([config, unit, condition, run], keep=False)
    if dup.any():
        first = rows[dup].iloc[0]
        raise IncompleteDesign(f"config {first[config]!s}, unit {first[unit]!s}, condition {first[condition]!s}, "
                               f"run {first[run]!s} appears more than once")
    values = pd.to_numeric(rows[value], errors="coerce")
    if values.isna().any():
        bad = rows[values.isna()].iloc[0]
        raise IncompleteDesign(f"config {bad[config]!s}, unit {bad[unit]!s}: value {bad[value]!r} is not a number")
    out = []
    for cfg in pd.unique(rows[config]):
        part = rows[rows[config] == cfg]
        table = part.pivot(index=unit, columns=[condition, run], values=value).sort_index()
        runs = sorted(pd.unique(part[run]))
        want = pd.MultiIndex.from_product([conditions, runs], names=[condition, run])
        table = table.reindex(columns=want)
        holes = np.argwhere(table.isna().to_numpy())
        if len(holes):
            (i, j), = holes[:1]
            c, r = table.columns[j]
            raise IncompleteDesign(f"config {cfg!r}, unit {table.index[i]!s}: no value for condition {c!s}, run {r!s}")
        out.append(PairedData(str(cfg), tuple(map(str, table.index)), table[a_name].to_numpy(dtype=float),
                              table[b_name].to_numpy(dtype=float), a_name, b_name, unit_name))
    return out

