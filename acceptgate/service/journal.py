"""The service's own durable record: registered tasks, decisions and call latencies (SQLite, WAL).

Each request writes here in one short transaction. The warehouse (DuckDB, one writer process) is
only touched by the publisher, in batches, so the service never holds DuckDB's write lock between
requests and scheduled flows and analysts keep working while it runs. A decision is *published* once
its rows are in the warehouse; until then it is only here.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = """
create table if not exists tasks (
    client text not null, task_id text not null, statement text not null, entry_point text not null,
    visible_json text not null, hidden_json text not null, visible_hash text not null,
    hidden_hash text not null, created_at real not null, reference text not null default '',
    wrong_json text not null default '[]', gauge text not null default 'skipped',
    certification text not null default 'skipped', primary key (client, task_id));
create table if not exists decisions (
    decision_id text primary key, client text not null, task_id text not null, kind text not null,
    arm text not null, decision text not null, verdict text not null, cases_passed integer,
    cases_total integer, feedback text, record_json text not null, created_at real not null,
    latency_seconds real not null, published_at real, publish_error text);
create index if not exists decisions_unpublished on decisions (published_at) where published_at is null;
create table if not exists calls (
    id integer primary key, client text, route text not null, method text not null,
    status integer not null, latency_seconds real not null, at real not null, published_at real);
"""


@dataclass(frozen=True)
class TaskRow:
    client: str
    task_id: str
    statement: str
    entry_point: str
    visible_json: str
    hidden_json: str
    visible_hash: str
    hidden_hash: str
    created_at: float
    reference: str = ""  # the client's reference solution ("" when registered without the gauge)
    wrong_json: str = "[]"  # the client's known-wrong samples, [{"label", "program"}]
    gauge: str = "skipped"  # checked: the suites passed the gauge at registration | skipped: opted out
    # the task's certificate (JSON: id, pool key and hash, held-out seed, V's FPR_h), or "skipped": registered
    # by a service started with --no-certify, or before certification was required
    certification: str = "skipped"


class Journal:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._con = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        self._con.execute("pragma journal_mode=wal")
        self._con.execute("pragma synchronous=normal")
        self._con.executescript(SCHEMA)
        # a journal written before registration took a reference: its tasks were never gauged
        have = {r[1] for r in self._con.execute("pragma table_info(tasks)").fetchall()}
        for column, sql in (("reference", "text not null default ''"), ("wrong_json", "text not null default '[]'"),
                            ("gauge", "text not null default 'skipped'"),
                            ("certification", "text not null default 'skipped'")):
            if column not in have:
                self._con.execute(f"alter table tasks add column {column} {sql}")

    def close(self) -> None:
        with self._lock:
            self._con.close()

    def _rows(self, sql: str, params: tuple = ()) -> list[sqlite3.Row]:
        with self._lock:
            cur = self._con.execute(sql, params)
            names = [d[0] for d in cur.description]
            return [dict(zip(names, r)) for r in cur.fetchall()]

    def _write(self, sql: str, params: tuple = ()) -> int:
        with self._lock:
            self._con.execute("begin immediate")
            try:
                cur = self._con.execute(sql, params)
                self._con.execute("commit")
            except BaseException:
                self._con.execute("rollback")
                raise
            return cur.rowcount

    # -- tasks -----------------------------------------------------------------------------------

    def task(self, client: str, task_id: str) -> TaskRow | None:
        rows = self._rows("select * from tasks where client = ? and task_id = ?", (client, task_id))
        return TaskRow(**rows[0]) if rows else None

    def tasks(self, client: str) -> list[TaskRow]:
        return [TaskRow(**r) for r in self._rows("select * from tasks where client = ? order by task_id", (client,))]

    def task_count(self, client: str) -> int:
        return self._rows("select count(*) as n from tasks where client = ?", (client,))[0]["n"]

    def add_task(self, row: TaskRow) -> None:
        self._write("insert into tasks (client, task_id, statement, entry_point, visible_json, hidden_json, "
                    "visible_hash, hidden_hash, created_at, reference, wrong_json, gauge, certification) "
                    "values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (row.client, row.task_id, row.statement, row.entry_point, row.visible_json,
                     row.hidden_json, row.visible_hash, row.hidden_hash, row.created_at, row.reference,
                     row.wrong_json, row.gauge, row.certification))

    # -- decisions -------------------------------------------------------------------------------

    def add_decision(self, d: dict[str, Any]) -> None:
        self._write("insert into decisions (decision_id, client, task_id, kind, arm, decision, verdict, "
                    "cases_passed, cases_total, feedback, record_json, created_at, latency_seconds) "
                    "values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (d["decision_id"], d["client"], d["task_id"], d["kind"], d["arm"], d["decision"],
                     d["verdict"], d["cases_passed"], d["cases_total"], d["feedback"],
                     json.dumps(d["record"]), d["created_at"], d["latency_seconds"]))

    def decision(self, client: str, decision_id: str) -> dict[str, Any] | None:
        rows = self._rows("select * from decisions where client = ? and decision_id = ?", (client, decision_id))
        return rows[0] if rows else None

    def decisions(self, client: str, task_id: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        if task_id is None:
            return self._rows("select * from decisions where client = ? order by created_at desc limit ?",
                              (client, limit))
        return self._rows("select * from decisions where client = ? and task_id = ? "
                          "order by created_at desc limit ?", (client, task_id, limit))

    def unpublished(self, limit: int = 200) -> list[dict[str, Any]]:
        return self._rows("select * from decisions where published_at is null and publish_error is null "
                          "order by created_at limit ?",
                          (limit,))

    def runs_of(self, decision_ids: list[str]) -> list[dict[str, Any]]:
        """The warehouse run id of each decision (the gate run it is published as)."""
        return [{"decision_id": i, "run_id": f"api-{r['client']}-{i}"} for i in decision_ids
                for r in self._rows("select client from decisions where decision_id = ?", (i,))]

    def mark_published(self, decision_ids: list[str], error: str | None = None) -> None:
        if not decision_ids:
            return
        marks = ",".join("?" * len(decision_ids))
        if error is None:
            self._write(f"update decisions set published_at = ?, publish_error = null "
                        f"where decision_id in ({marks})", (time.time(), *decision_ids))
        else:
            self._write(f"update decisions set publish_error = ? where decision_id in ({marks})",
                        (error, *decision_ids))

    # -- calls -----------------------------------------------------------------------------------

    def add_call(self, client: str | None, route: str, method: str, status: int, latency: float) -> None:
        self._write("insert into calls (client, route, method, status, latency_seconds, at) values (?, ?, ?, ?, ?, ?)",
                    (client, route, method, status, latency, time.time()))

    def calls(self, client: str | None = None) -> list[dict[str, Any]]:
        if client is None:
            return self._rows("select * from calls order by id")
        return self._rows("select * from calls where client = ? order by id", (client,))

    def unpublished_calls(self, limit: int = 5000) -> list[dict[str, Any]]:
        return self._rows("select * from calls where published_at is null order by id limit ?", (limit,))

    def mark_calls_published(self, ids: list[int]) -> None:
        if ids:
            self._write(f"update calls set published_at = ? where id in ({','.join('?' * len(ids))})",
                        (time.time(), *ids))
