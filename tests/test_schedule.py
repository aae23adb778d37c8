"""acceptgate.schedule without Prefect: the declared stage chain, the backfill request, the run selection."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import pytest

from acceptgate import schedule, warehouse
from acceptgate.errors import InvalidInput


def test_stage_chain_order_and_explicit_install_check():
    names = [s.name for s in schedule.NIGHTLY_STAGES]
    assert names == ["audit", "certify", "gates", "leak-audit", "stats"]
    assert schedule.NIGHTLY_STAGES[0].installed()
    missing = schedule.Stage("x", "flows.no_such_stage", "x", "")
    assert not missing.installed()
    assert not schedule.Stage("y", "no_such_package.mod", "y", "").installed()


def test_stage_arguments_follow_the_flow_signature():
    def flow(warehouse, backend="local", run_ids=None):
        return None

    stage = schedule.Stage("s", "m", "f", "")
    params = {"warehouse": "w.duckdb", "backend": "docker", "limit": 3, "run_ids": None}
    assert stage.call_arguments(flow, params) == {"warehouse": "w.duckdb", "backend": "docker"}

    def needs_more(warehouse, records):
        return None

    skip = stage.call_arguments(needs_more, params)
    assert isinstance(skip, schedule.Skip) and "records" in skip.reason


def test_gates_stage_needs_a_source_and_tasks():
    gates = next(s for s in schedule.NIGHTLY_STAGES if s.name == "gates")
    assert isinstance(gates.arguments({}), schedule.Skip)
    assert isinstance(gates.arguments({"gate_source": "codet:x"}), schedule.Skip)
    args = gates.arguments({"gate_source": "codet:x", "gate_suites": "d", "arms": ["off"]})
    assert args == {"source": "codet:x", "suites_dir": "d", "humanevalplus": None, "arms": ["off"],
                    "profile": "default"}
    args = gates.arguments({"gate_source": "codet:x", "gate_suites": "d", "profile": "evalplus"})
    assert (args["profile"], args["arms"]) == ("evalplus", ["conform", "off"])


@pytest.mark.parametrize("values, field", [
    ({}, None),
    ({"arms": ["conform"]}, None),
    ({"run_ids": ["ok"], "arms": ["gated"]}, "arms"),
    ({"run_ids": ["bad id"]}, "run_ids"),
    ({"since": "2026-02-01", "until": "2026-01-01"}, None),
    ({"run_ids": ["a"], "colour": "red"}, "colour"),
])
def test_backfill_request_rejects_with_the_field(values, field):
    with pytest.raises(InvalidInput) as err:
        schedule.backfill_request(**values)
    assert err.value.field == field


def test_select_runs_by_id_date_and_arm(tmp_path):
    path = tmp_path / "w.duckdb"
    warehouse.migrate(path)
    day = dt.datetime(2026, 3, 1, 12, tzinfo=dt.timezone.utc)
    with warehouse.transaction(path) as con:
        con.execute("insert into runs (run_id, run_id_origin, pipeline, acceptgate_version, dataset, source, "
                    "source_sha256, backend, status, attempts, first_started_at, started_at) values "
                    "('audit-a', 'user', 'audit/1', '0', 'humaneval', 's', 'h', 'local', 'ok', 1, ?, ?)", [day, day])
        for run_id, arms, when in (("g1", "conform,off", day), ("g2", "hmix", day + dt.timedelta(days=5))):
            con.execute("insert into gate_runs (run_id, run_id_origin, pipeline, acceptgate_version, source, "
                        "tasks_from, tasks_sha256, task_count, arms, per_task, backend, status, started_at) values "
                        "(?, 'user', 'gate/1', '0', 'codet:x', 'd', 'h', 1, ?, 5, 'local', 'ok', ?)",
                        [run_id, arms, when])
    pick = lambda **kw: [r.run_id for r in schedule.select_runs(path, schedule.backfill_request(**kw))]  # noqa: E731
    assert pick(since=dt.date(2026, 3, 1)) == ["audit-a", "g1", "g2"]
    assert pick(since=dt.date(2026, 3, 1), until=dt.date(2026, 3, 1)) == ["audit-a", "g1"]
    assert pick(since=dt.date(2026, 3, 1), arms=["off"]) == ["g1"]
    assert pick(run_ids=["g2", "audit-a"]) == ["audit-a", "g2"]
    with pytest.raises(InvalidInput, match="no such run"):
        pick(run_ids=["nope"])
