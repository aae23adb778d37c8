"""Seed 004's result tables as report sections, one per table, read from their views (sql/views/seed004_*):
Table 2, Table 3, Table 5, the per-run Tables 15-17, the family means and M.2's overall interaction test.
Rates are shown in percent with one decimal, as the seed prints them. A separate module so the report's
layout can change without touching it: importing it registers one section per table with ``data.register``."""

from __future__ import annotations

import pandas as pd

from acceptgate.report.data import MAX_ROWS, Section, SectionSpec, register

DISPOSITIONS = ("avoid", "transfer", "mitigate", "accept")
SHORT = {"avoid": "Avo", "transfer": "Tra", "mitigate": "Mit", "accept": "Acc"}


def _pct(frame: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    out = frame.copy()
    for c in cols:
        if c in out:
            out[c] = (100 * out[c].astype(float)).round(1)
    return out


def _table2_like(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    cols = (keys + ["tsr", "tsr_e_plus", "tsr_e_minus", "vr"] + [f"vr_{d}" for d in DISPOSITIONS] + ["er"]
            + [f"er_{d}" for d in DISPOSITIONS])
    out = _pct(frame[[c for c in cols if c in frame]], [c for c in cols if c not in keys])
    names = {"tsr": "TSR", "tsr_e_plus": "TSR E+", "tsr_e_minus": "TSR E-", "vr": "VR", "er": "ER"}
    names.update({f"vr_{d}": f"VR {SHORT[d]}" for d in DISPOSITIONS})
    names.update({f"er_{d}": f"ER {SHORT[d]}" for d in DISPOSITIONS})
    return out.rename(columns=names)


def table2(con) -> pd.DataFrame:
    return _table2_like(con.execute(f"select * from seed004_table2 order by judge_run_id, config limit {MAX_ROWS}").df(),
                        ["judge_run_id", "config", "runs"])


def per_run(con) -> pd.DataFrame:
    return _table2_like(con.execute("select * from seed004_per_run order by judge_run_id, run, config "
                                    f"limit {MAX_ROWS}").df(), ["judge_run_id", "run", "config"])


def family_means(con) -> pd.DataFrame:
    return _table2_like(con.execute(f"select * from seed004_family_means order by judge_run_id, family "
                                    f"limit {MAX_ROWS}").df(), ["judge_run_id", "family", "configs", "members"])


def table5(con) -> pd.DataFrame:
    frame = con.execute(f"select * from seed004_table5 order by judge_run_id, disposition limit {MAX_ROWS}").df()
    return _pct(frame, ["vr", "e_minus_rate", "er"]).rename(columns={"vr": "VR", "e_minus_rate": "E- rate", "er": "ER"})


def table3(con) -> pd.DataFrame:
    f = con.execute(f"select * from seed004_table3 order by run_id, config limit {MAX_ROWS}").df()
    if f.empty:
        return f

    def cell(r, lo, hi):
        return [None if pd.isna(x) else f"{100 * x:.1f} [{100 * a:.1f}, {100 * b:.1f}]" for x, a, b in zip(r, lo, hi)]

    return pd.DataFrame({"stats run": f.run_id, "judge run": f.judge_run_id, "config": f.config, "pairs": f.n_units,
                         "runs": f.runs,
                         "E+ rate [CI]": cell(f.rate_e_plus, f.rate_e_plus_ci_low, f.rate_e_plus_ci_high),
                         "E- rate [CI]": cell(f.rate_e_minus, f.rate_e_minus_ci_low, f.rate_e_minus_ci_high),
                         "Delta pp [CI]": cell(f.delta, f.delta_ci_low, f.delta_ci_high),
                         "ER [CI]": cell(f.er, f.er_ci_low, f.er_ci_high), "p": f.p, "Holm p": f.p_holm})


def overall_interaction(con) -> pd.DataFrame:
    return con.execute("select run_id, measure, configs, n_units as task_pairs, runs, statistic, p, exact_test, "
                       f"lr_statistic, lr_df, lr_p, resamples, seed from stats_overall_interaction limit {MAX_ROWS}").df()


SPECS = (  # (key, title, the relation it needs, reader)
    ("seed004-table2", "Seed 004 Table 2: TSR, VR and ER per configuration (runs averaged)", "seed004_table2", table2),
    ("seed004-table3", "Seed 004 Table 3: per-condition rates, paired drop and ER with 95% CIs", "seed004_table3",
     table3),
    ("seed004-table5", "Seed 004 Table 5: disposition-level ER (mean of configuration ERs)", "seed004_table5", table5),
    ("seed004-per-run", "Seed 004 Tables 15-17: per-run results", "seed004_per_run", per_run),
    ("seed004-families", "Seed 004 family means", "seed004_family_means", family_means),
    ("seed004-m2", "Seed 004 M.2: overall condition x run interaction", "stats_overall_interaction",
     overall_interaction),
)


def sections(con, rels: set[str]) -> list[Section]:
    out = []
    for key, title, relation, read in SPECS:
        sec = Section(key, title)
        if relation in rels:
            frame = read(con)
            if len(frame):
                sec.tables = {relation: frame}
        if not sec.ran:
            sec.note = "not run yet (acceptgate judge, then acceptgate stats --judge-run ID)"
        out.append(sec)
    return out


def _collector(relation: str, read):
    def collect(reader, section: Section) -> None:
        if relation in reader.rels:
            frame = read(reader.con)
            if len(frame):
                section.tables = {relation: frame}
    return collect


for _key, _title, _relation, _read in SPECS:
    register(SectionSpec(_key, _title, _collector(_relation, _read),
                         empty="not run yet (acceptgate judge, then acceptgate stats --judge-run ID)"))
