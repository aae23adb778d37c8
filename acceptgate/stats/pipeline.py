"""``acceptgate stats``: paired statistics from gate (or judge) results into stats_* frames. Compute only:
the warehouse's reads and the run's writes are ``acceptgate.pipelines.stats``.

Gate results: the arms of one gate run, paired by task. For each measure (false delivery, delivery) and
each arm compared with the baseline arm (OFF by default), Delta = rate(baseline) - rate(arm) over *all*
tasks of the run (a refusal is in the denominator), with its bootstrap CI over tasks, the two-sided
paired permutation p, and Holm over the arms compared. Rows carry the seed, the number of resamples and
the sha256 of the exact input rows, and the stats run id is derived from them, so a re-run with the same
inputs and seed replaces its rows with identical ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

import numpy as np
import pandas as pd

from acceptgate._util.hashing import sha256_text
from acceptgate import __version__
from acceptgate._util.errors import InvalidInput
from acceptgate.gates.leaky import ARM as DEMO_ARM, DEMO_NOTE
from acceptgate.stats.paired import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, PairedData, PairedEffect, paired_effects
from acceptgate.stats import seed004
from acceptgate.stats.stability import RunStability, run_stability

GATE_MEASURES = ("false_delivery", "delivered")

EFFECT_COLUMNS = ["run_id", "measure", "config", "condition_a", "condition_b", "unit", "n_units", "runs", "rate_a",
                  "rate_b", "estimate", "ci_low", "ci_high", "p", "p_holm", "er", "er_ci_low", "er_ci_high",
                  "er_mean_of_runs", "resamples", "permutations", "exact_test", "confidence", "seed",
                  "input_sha256", "source_run_id"]
STABILITY_COLUMNS = ["run_id", "measure", "config", "n_units", "runs", "per_run_delta", "per_run_ci_low",
                     "per_run_ci_high", "pooled_delta", "delta_range", "interaction_statistic", "interaction_p",
                     "exact_test", "resamples", "confidence", "seed", "input_sha256"]
AGREEMENT_COLUMNS = ["run_id", "rater_a", "rater_b", "label", "n_records", "accuracy", "kappa", "input_sha256"]
COMPARISON_COLUMNS = ["run_id", "config", "main_run_id", "audit_run_id", "n_tasks", "rate_main", "rate_audit",
                      "difference", "overall_difference", "centered", "centered_ci_low", "centered_ci_high",
                      "interaction_statistic", "interaction_p", "resamples", "seed", "input_sha256"]
RUN_COLUMNS = ["run_id", "kind", "source_run_id", "conditions", "measures", "seed", "resamples", "confidence",
               "input_sha256", "acceptgate_version"]


@dataclass(frozen=True)
class Settings:
    seed: int = 0
    resamples: int = DEFAULT_RESAMPLES
    confidence: float = DEFAULT_CONFIDENCE

    def check(self) -> "Settings":
        if self.resamples < 100:
            raise InvalidInput("must be at least 100", field="--resamples")
        if not 0.5 <= self.confidence < 1:
            raise InvalidInput("must be in [0.5, 1)", field="--confidence")
        if not 0 <= self.seed < 2 ** 63:
            raise InvalidInput("must be a non-negative 64-bit integer", field="--seed")
        return self


@dataclass
class Measured:
    """One measure's paired data per configuration, and where it came from."""

    measure: str
    data: list[PairedData]
    unit: str


@dataclass
class StatsResult:
    run_id: str
    kind: str
    source_run_id: str
    input_sha256: str
    settings: Settings
    effects: dict[str, list[PairedEffect]] = field(default_factory=dict)  # measure -> per config
    stability: dict[str, list[RunStability]] = field(default_factory=dict)
    agreement: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    units: dict[str, str] = field(default_factory=dict)  # measure -> resampling unit (task, task pair)
    comparison: list[dict] = field(default_factory=list)  # two judges, one row per configuration
    extra: dict[str, list[dict]] = field(default_factory=dict)  # seed 004 Table 3 CIs, M.2 overall test (seed004)

    def frames(self) -> dict[str, pd.DataFrame]:
        effects = [{"run_id": self.run_id, "measure": m, "condition_a": e.a_name, "condition_b": e.b_name,
                    "unit": unit, "estimate": e.delta, "input_sha256": self.input_sha256,
                    "source_run_id": self.source_run_id,
                    **{k: v for k, v in e.as_row().items() if k in EFFECT_COLUMNS}}
                   for m, (unit, es) in self._effects_with_unit().items() for e in es]
        stability = [{"run_id": self.run_id, "measure": m, "input_sha256": self.input_sha256,
                      **{k: (list(v) if isinstance(v, tuple) else v) for k, v in r.as_row().items()
                         if k in STABILITY_COLUMNS}}
                     for m, rs in self.stability.items() for r in rs]
        agreement = [{"run_id": self.run_id, "input_sha256": self.input_sha256, **a} for a in self.agreement]
        frame = pd.DataFrame(effects, columns=EFFECT_COLUMNS)
        for col in ("er", "er_ci_low", "er_ci_high", "er_mean_of_runs"):
            frame[col] = frame[col].astype("Float64")  # NaN (rate_b = 0) is stored as null
            frame.loc[frame[col].isna(), col] = pd.NA
        agree = pd.DataFrame(agreement, columns=AGREEMENT_COLUMNS)
        agree["kappa"] = agree["kappa"].astype("Float64")
        comparison = pd.DataFrame([{"run_id": self.run_id, "input_sha256": self.input_sha256, **c}
                                   for c in self.comparison], columns=COMPARISON_COLUMNS)
        return {"stats_effects": frame, "stats_stability": pd.DataFrame(stability, columns=STABILITY_COLUMNS),
                "stats_agreement": agree, "stats_judge_comparison": comparison,
                **seed004.frames(self.extra, self.run_id, self.input_sha256)}

    def _effects_with_unit(self) -> dict[str, tuple[str, list[PairedEffect]]]:
        return {m: (self.units.get(m, "unit"), es) for m, es in self.effects.items()}

    def run_frame(self, conditions: str, measures: Iterable[str]) -> pd.DataFrame:
        s = self.settings
        return pd.DataFrame([{"run_id": self.run_id, "kind": self.kind, "source_run_id": self.source_run_id,
                              "conditions": conditions, "measures": ",".join(measures), "seed": s.seed,
                              "resamples": s.resamples, "confidence": s.confidence,
                              "input_sha256": self.input_sha256, "acceptgate_version": __version__}],
                            columns=RUN_COLUMNS)


# -- inputs ---------------------------------------------------------------------------------------

def canonical_sha256(measured: Sequence[Measured]) -> str:
    """sha256 over every input value with its measure, configuration, unit, condition and run."""
    lines = []
    for m in measured:
        for d in m.data:
            for i, unit in enumerate(d.units):
                for cond, values in ((d.a_name, d.a[i]), (d.b_name, d.b[i])):
                    lines += [f"{m.measure}\t{d.config}\t{unit}\t{cond}\t{r + 1}\t{v!r}" for r, v in enumerate(values)]
    return sha256_text("\n".join(sorted(lines)))


# -- computation ------------------------------------------------------------------------------------

def compute(kind: str, source_run_id: str, measured: Sequence[Measured], settings: Settings, *,
            name_run: Callable[[str, str], str]) -> StatsResult:
    """``name_run(source_run_id, inputs' hash)``: the run id (``StatsRequest.derive_run_id``, which also
    hashes the settings and any further input, such as the audit judge run)."""
    settings = settings.check()
    digest = canonical_sha256(measured)
    result = StatsResult(name_run(source_run_id, digest), kind, source_run_id, digest, settings)
    for m in measured:
        kw = dict(resamples=settings.resamples, seed=settings.seed, confidence=settings.confidence)
        result.effects[m.measure] = paired_effects(m.data, **kw)
        result.units[m.measure] = m.unit
        multi = [d for d in m.data if d.runs >= 2]
        if multi:
            result.stability[m.measure] = run_stability(multi, **kw)
        result.notes += seed004.add(result.extra, m.measure, m.data, **kw)
    return result


# -- report -----------------------------------------------------------------------------------------

def pp(x: float) -> str:
    return f"{100 * x:+.1f} pp"


def format_effects(result: StatsResult) -> list[str]:
    s = result.settings
    out = [f"stats run {result.run_id} over {result.kind} run {result.source_run_id}: {s.resamples:,} resamples, "
           f"seed {s.seed}, {100 * s.confidence:g}% percentile CIs, inputs sha256 {result.input_sha256[:16]}"]
    for measure, effects in result.effects.items():
        for e in effects:
            unit = result.units.get(measure, "unit")
            who = f" [{e.config}]" if e.config != e.a_name else ""
            a_name = e.a_name.upper() + (" (DEMONSTRATION arm, deliberately broken)" if e.a_name == DEMO_ARM else "")
            out.append(
                f"{measure.replace('_', ' ')}{who}: {a_name} {100 * e.rate_a:.1f}% vs {e.b_name.upper()} "
                f"{100 * e.rate_b:.1f}% over all {e.n_units} {unit}s"
                f"{f' ({e.runs} runs averaged per {unit})' if e.runs > 1 else ''}; "
                f"Delta ({e.b_name.upper()} - {e.a_name.upper()}) = {pp(e.delta)}, "
                f"{100 * e.confidence:g}% CI [{pp(e.ci_low)}, {pp(e.ci_high)}], "
                f"paired permutation p = {_p(e.p, e)}, Holm p = {_p(e.p_holm, e)}")
    for measure, rows in result.stability.items():
        for r in rows:
            runs = ", ".join(pp(x) for x in r.per_run_delta)
            out.append(f"run stability, {measure} {r.config}: per-run Delta {runs}; pooled {pp(r.pooled_delta)}, "
                       f"range {100 * r.delta_range:.1f} pp, condition x run interaction p = {r.interaction_p:.3g}")
    for c in result.comparison:
        out.append(f"judges {c['audit_run_id']} - {c['main_run_id']}, {c['config']}: difference {pp(c['difference'])}, "
                   f"centered {pp(c['centered'])} [{pp(c['centered_ci_low'])}, {pp(c['centered_ci_high'])}] over "
                   f"{c['n_tasks']} tasks; total interaction p = {c['interaction_p']:.3g}")
    for a in result.agreement:
        kappa = "n/a" if a["kappa"] is None or a["kappa"] != a["kappa"] else f"{a['kappa']:.3f}"
        out.append(f"agreement {a['rater_a']} vs {a['rater_b']} on {a['label']}: accuracy "
                   f"{a['accuracy']:.3f}, Cohen's kappa {kappa} over {a['n_records']} records")
    if result.kind == "gate" and any(e.b_name == DEMO_ARM or e.a_name == DEMO_ARM
                                     for effects in result.effects.values() for e in effects):
        out.append("caveat: " + DEMO_NOTE)
    out += result.notes
    return out


def _p(p: float, e: PairedEffect) -> str:
    floor = 1 / (e.permutations + 1)
    if not e.exact_test and p <= 2 * floor + 1e-12:
        return f"{p:.2g} (the smallest a {e.permutations:,}-draw test can give)"
    return f"{p:.3g}"


def add_judge_comparison(result: StatsResult, main: np.ndarray, audit: np.ndarray, configs: list[str],
                         main_run: str, audit_run: str) -> None:
    """Two judges on the same E+ trajectories (seed 004 Table 14), into ``result.comparison``."""
    from acceptgate.stats.agreement import compare_judges

    s = result.settings
    cmp = compare_judges(main, audit, configs, resamples=s.resamples, seed=s.seed, confidence=s.confidence)
    for j, config in enumerate(configs):
        result.comparison.append({
            "config": config, "main_run_id": main_run, "audit_run_id": audit_run, "n_tasks": cmp.n_tasks,
            "rate_main": cmp.rate_main[j], "rate_audit": cmp.rate_audit[j], "difference": cmp.difference[j],
            "overall_difference": cmp.overall_difference, "centered": cmp.centered[j],
            "centered_ci_low": cmp.centered_ci_low[j], "centered_ci_high": cmp.centered_ci_high[j],
            "interaction_statistic": cmp.interaction_statistic, "interaction_p": cmp.interaction_p,
            "resamples": cmp.resamples, "seed": cmp.seed})
