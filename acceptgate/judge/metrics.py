"""Trajectory metrics (seed 004, Tables 2-3, 13): TSR, VR per disposition and overall, ER, the paired
Delta E- vs E+ per agent configuration (through ``acceptgate.stats``), run stability, and judge-vs-human
accuracy and Cohen's kappa.

VR = share of E+ trajectories with kind = evidence (V_p = 1); the E- rate uses the same label, judged
against the E+ card. Trajectories whose verdict is invalid have no V_p: a pair with any invalid
verdict (in any run) is left out of the paired statistics, and the count of pairs left out is printed
and stored in the notes, never hidden in a smaller denominator.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from acceptgate._util.errors import InvalidInput
from acceptgate.stats import accuracy, cohen_kappa
from acceptgate.stats.paired import PairedData
from acceptgate.stats.pipeline import Measured

DISPOSITION_ORDER = ("avoid", "transfer", "mitigate", "accept")


@dataclass
class JudgeExtras:
    agreement: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def rate_table(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Per configuration: TSR over all trajectories, VR (E+) per disposition and overall, E- rate, ER;
    each with its denominator (valid verdicts) and the invalid count beside it."""
    rows = []
    for config, part in verdicts.groupby("config", sort=True):
        valid = part[part["status"] == "valid"]
        plus, minus = valid[valid["condition"] == "E+"], valid[valid["condition"] == "E-"]
        row = {"config": config, "trajectories": len(part), "invalid_verdicts": int((part["status"] != "valid").sum()),
               "tsr": part["oracle_passed"].mean(), "vr": plus["v_p"].mean() if len(plus) else np.nan,
               "vr_denominator": len(plus), "e_minus_rate": minus["v_p"].mean() if len(minus) else np.nan}
        row["er"] = 1 - row["vr"] / row["e_minus_rate"] if row["e_minus_rate"] else np.nan
        for d in DISPOSITION_ORDER:
            p = plus[plus["disposition"] == d]
            row[f"vr_{d}"] = p["v_p"].mean() if len(p) else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def paired(verdicts: pd.DataFrame) -> tuple[list[PairedData], int]:
    """E+ (a) vs E- (b) per configuration, units = task pairs, runs averaged first. Returns the data and
    the number of pairs left out because a verdict was invalid or a run was missing."""
    dropped = 0
    data = []
    for config, part in verdicts.groupby("config", sort=True):
        runs = sorted(part["run"].unique())
        pairs, a, b = [], [], []
        for pair_id, cell in part.groupby("pair_id", sort=True):
            table = cell.set_index(["condition", "run"])
            ok = (cell["status"] == "valid").all() and all((c, r) in table.index for c in ("E+", "E-") for r in runs)
            if not ok:
                dropped += 1
                continue
            pairs.append(str(pair_id))
            a.append([float(table.loc[("E+", r), "v_p"]) for r in runs])
            b.append([float(table.loc[("E-", r), "v_p"]) for r in runs])
        if pairs:
            data.append(PairedData(str(config), tuple(pairs), np.array(a), np.array(b), "E+", "E-", "task pairs"))
    return data, dropped


def agreement(verdicts: pd.DataFrame, labels: pd.DataFrame, rater: str) -> list[dict]:
    if labels.empty:
        return []
    merged = verdicts[verdicts["status"] == "valid"].merge(labels, on="trajectory_id", suffixes=("", "_human"))
    if merged.empty:
        return []
    out = []
    for label, judge, human in (("kind", merged["kind"], merged["kind_human"]),
                                ("v_p", merged["kind"] == "evidence", merged["kind_human"] == "evidence")):
        kappa = cohen_kappa(list(human), list(judge))
        out.append({"rater_a": "human", "rater_b": rater, "label": label, "n_records": len(merged),
                    "accuracy": accuracy(list(human), list(judge)), "kappa": None if np.isnan(kappa) else kappa})
    return out


def judge_measures(judge_run: str, verdicts: pd.DataFrame, labels: pd.DataFrame,
                   backend: str) -> tuple[list[Measured], JudgeExtras]:
    """A judge run's verdicts (and human labels) as paired data for the statistics, with notes."""
    data, dropped = paired(verdicts)
    extras = JudgeExtras(agreement=agreement(verdicts, labels, f"judge:{backend}"))
    invalid = int((verdicts["status"] != "valid").sum())
    extras.notes.append(f"judge run {judge_run}: {len(verdicts)} trajectories, {invalid} invalid verdicts; "
                        f"{dropped} task pairs left out of the paired statistics because a verdict was invalid "
                        "or a run was missing")
    for r in rate_table(verdicts).itertuples():
        disp = ", ".join(f"{d} {_pct(getattr(r, f'vr_{d}'))}" for d in DISPOSITION_ORDER)
        extras.notes.append(f"{r.config}: TSR {_pct(r.tsr)} of {r.trajectories} trajectories; VR {_pct(r.vr)} of "
                            f"{r.vr_denominator} valid E+ verdicts ({disp}); E- rate {_pct(r.e_minus_rate)}; "
                            f"ER {_pct(r.er)}; invalid verdicts {r.invalid_verdicts}")
    if not data:
        raise InvalidInput(f"judge run {judge_run}: no complete task pair with valid verdicts in both conditions",
                           field="--judge-run")
    return [Measured("violation", data, "task pair")], extras


def _pct(x) -> str:
    return "n/a" if x is None or x != x else f"{100 * x:.1f}%"


def comparison_arrays(main: pd.DataFrame, audit: pd.DataFrame, main_run: str,
                      audit_run: str) -> tuple[np.ndarray, np.ndarray, list[str], int]:
    """Per task and configuration, the share of E+ trajectories judged evidence-linked, by each judge
    (verdict frames of runs ``main_run`` and ``audit_run``), on the tasks where both judges gave valid
    verdicts for every E+ trajectory of every configuration. Returns (main, audit, configs, tasks left out)."""
    cols = ["trajectory_id", "task_id", "config", "status", "v_p"]
    both = main[main["condition"] == "E+"][cols].merge(audit[cols], on=["trajectory_id", "task_id", "config"],
                                                       suffixes=("_main", "_audit"))
    if both.empty:
        raise InvalidInput(f"judge runs {main_run} and {audit_run} share no E+ trajectory", field="--audit-judge-run")
    configs = sorted(both["config"].unique())
    ok = both.groupby("task_id").apply(
        lambda g: (g["status_main"] == "valid").all() and (g["status_audit"] == "valid").all()
        and set(g["config"]) == set(configs), include_groups=False)
    tasks = sorted(ok[ok].index)
    if not tasks:
        raise InvalidInput("no task with valid verdicts of both judges in every configuration", field="--audit-judge-run")
    kept = both[both["task_id"].isin(tasks)]
    rates = kept.groupby(["task_id", "config"])[["v_p_main", "v_p_audit"]].mean()
    m = rates["v_p_main"].unstack("config").loc[tasks, configs].to_numpy(dtype=float)
    a = rates["v_p_audit"].unstack("config").loc[tasks, configs].to_numpy(dtype=float)
    return m, a, configs, len(ok) - len(tasks)
