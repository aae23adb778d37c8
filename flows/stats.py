"""The ``stats`` flow: gate (or judge) results from the warehouse -> paired statistics -> stats_* tables.
Run it with ``acceptgate stats``. The flow only sequences the tasks; the rows are validated (Great
Expectations) before they are written, and a failed expectation writes nothing."""

from __future__ import annotations

from prefect import flow

from acceptgate.stats import pipeline as core
from acceptgate.tasks import stats_tasks as t


@flow(name="stats", persist_result=False, log_prints=False)
def stats(warehouse: str | None = None, gate_run: str | None = None, judge_run: str | None = None,
          baseline: str = "off", arms: list[str] | None = None, audit_judge_run: str | None = None,
          settings: core.Settings = core.Settings()) -> core.StatsResult:
    path = t.prepare_warehouse(warehouse)
    if judge_run is not None:
        source_run, measured, extra = t.load_judge(path, judge_run)
        result = t.compute("judge", source_run, measured, settings, audit_judge_run or "")
        result.agreement, result.notes = extra.agreement, extra.notes
        if audit_judge_run is not None:
            t.add_judge_comparison(path, result, judge_run, audit_judge_run)
        conditions = "E+,E-"
    else:
        source_run, measured = t.load_gate(path, gate_run, baseline, arms)
        result = t.compute("gate", source_run, measured, settings)
        conditions = f"arm,{baseline}"
    t.write(path, result, conditions)
    return result
