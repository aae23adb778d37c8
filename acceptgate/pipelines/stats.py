"""Statistics as a run of the ledger: a gate run's deliveries read from the warehouse as paired data,
and a stats run (``acceptgate.stats.pipeline`` computes it) recorded, validated, written in one
transaction and published. The only warehouse I/O of the statistics."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from acceptgate.store import warehouse
from acceptgate._util.errors import InvalidInput
from acceptgate.pipelines.families import STATS
from acceptgate.stats.paired import PairedData
from acceptgate.stats.pipeline import GATE_MEASURES, Measured, StatsResult


def latest_gate_run(con, baseline: str) -> str:
    row = con.execute(
        "select run_id from gate_runs where status = 'ok' and list_contains(string_split(arms, ','), ?) "
        "and len(string_split(arms, ',')) >= 2 order by finished_at desc limit 1", [baseline]).fetchone()
    if row is None:
        raise InvalidInput(f"no finished gate run with the baseline arm {baseline!r} and another arm; run "
                           "'acceptgate gate --arm conform --arm off ...' first", field="--gate-run")
    return row[0]


def gate_inputs(path: str | Path, gate_run: str | None = None, *, baseline: str = "off",
                arms: Sequence[str] | None = None) -> tuple[str, list[Measured]]:
    """The gate run's deliveries as paired data: per measure, one PairedData per arm vs the baseline."""
    with warehouse.connect(path, read_only=True) as con:
        tables = {r[0] for r in con.execute("select table_name from information_schema.tables").fetchall()}
        if "deliveries" not in tables:
            raise InvalidInput("the warehouse has no gate results (table deliveries)", source=str(path))
        gate_run = gate_run or latest_gate_run(con, baseline)
        frame = con.execute("select arm, task_id, false_delivery, delivered from deliveries where run_id = ? "
                            "order by task_id, arm", [gate_run]).df()
    if frame.empty:
        raise InvalidInput(f"no deliveries for gate run {gate_run!r}", source=str(path), field="--gate-run")
    present = list(dict.fromkeys(frame["arm"]))
    if baseline not in present:
        raise InvalidInput(f"gate run {gate_run} has no arm {baseline!r} (arms: {', '.join(present)})",
                           field="--baseline")
    compared = [a for a in (arms or present) if a != baseline]
    missing = [a for a in compared if a not in present]
    if missing or not compared:
        raise InvalidInput(f"gate run {gate_run} has arms {', '.join(present)}; cannot compare "
                           f"{', '.join(missing) or 'nothing'} with {baseline}", field="--arm")
    wide = {m: frame.pivot(index="task_id", columns="arm", values=m).sort_index() for m in GATE_MEASURES}
    measured = []
    for m, table in wide.items():
        holes = table[[baseline, *compared]].isna().any(axis=1)
        if holes.any():
            raise InvalidInput(f"arms are not paired: task {table.index[holes][0]} lacks an arm", field="--gate-run")
        data = [PairedData(arm, tuple(table.index), table[arm].astype(float).to_numpy(),
                           table[baseline].astype(float).to_numpy(), arm, baseline, "tasks") for arm in compared]
        measured.append(Measured(m, data, "task"))
    return gate_run, measured


def write(path: str | Path, result: StatsResult, *, conditions: str, expectations_dir=None,
          publish: bool = True) -> dict[str, int]:
    """Record the stats run: an attempt, every frame and the stats_runs row validated together, then
    written in one transaction, and (``publish``) the run in the analysts' snapshot."""
    with STATS.run(path, result.run_id, publish=publish) as run:
        row = result.run_frame(conditions, result.effects)
        written = run.write_stage("stats", {**result.frames(), STATS.table: row}, expectations_dir=expectations_dir)
    return written.rows
