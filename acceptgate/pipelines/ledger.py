"""The run ledger: the one place where a run meets the warehouse.

Every pipeline -- audit, gate (and its delivery scoring), leak audit and backfill, certify, stats,
judge, the service's publisher -- goes through this module, and no other module writes a run
family's table (``runs``, ``gate_runs``, ``v4v_runs``, ``stats_runs``, ``judge_runs``, and any new
``*_runs``) or the attempt log. The life cycle::

    from acceptgate.pipelines.families import GATE       # every run family is declared once, there

    path = ledger.prepare(args.warehouse)                 # resolve, check, apply pending migrations
    run_id = runids.derive_run_id("gate", {...inputs' hashes and settings...})   # or the user's --run-id
    with GATE.run(path, run_id, row=run_frame) as run:
        run.write_stage("gate", {"gate_decisions": frame, ...})          # validated, then one transaction
        run.write_stage("deliveries", {"deliveries": frame}, related={"gate_decisions": frame})
    # the block returned: the run's status is 'ok' and its rows are in the analysts' snapshot

A run family (``Family``: the kind recorded as the attempt's flow, the run table, the stages and each
stage's tables) is declared once, in ``acceptgate.pipelines.families``; every call takes it.

What each step does:

- ``Family.start`` (``Family.run`` calls it) records a new attempt in ``run_attempts`` ('running', flow =
  the family's kind) before anything else is written; validates the run's row (``row``, one-row frame
  of the family's table) against ``expectations/<table>.json`` and upserts it with ``status =
  'running'`` and the columns the table has among ``started_at``, ``first_started_at``, ``attempts``,
  ``written_at``; and deletes the run's rows of the family's stage tables and ``run_stages`` so that an
  attempt's rows all come from it (the snapshot keeps the last published version until this attempt
  publishes).
- ``Run.write_stage(stage, frames)`` refuses frames that are not exactly the stage's tables of the
  family, plus optionally the run's row (ValueError), then validates the whole batch
  (``expectations.validate_batch``):
  a failure puts the batch in ``quarantine``, ends the attempt 'failed' naming the stage, and raises
  ExpectationFailed with nothing of the stage written. Otherwise, in one transaction: the run's rows
  of each table are replaced (or ``write(con, frames)`` does a pipeline's own replace, e.g. the leak
  audit's per-record replace), the run's row (when it is known only with the results, as for
  stats, judge and score) is upserted, and the stage is recorded in ``run_stages`` and the attempt's
  ``last_stage``.
- ``Run.finish()`` sets the run's row 'ok' (``finished_at``, ``wall_seconds`` from the attempt's
  start) and publishes the run (plus ``also_publish``: e.g. the gate runs a leak audit scanned) to
  ``<name>.snapshot.duckdb``; the attempt ends 'ok'.
- ``Run.fail(exc)`` / an exception through ``run`` or ``Run.guard()``: the attempt and the run's row
  end 'failed' with the stage (``exc.stage`` when it has one) and the error -- or 'interrupted' when
  the exception is a stop request (``interrupt.is_stop``: KeyboardInterrupt, ``Interrupted``,
  SystemExit with code 130 or 143, or an error raised while one unwound). Nothing is published; the
  snapshot keeps what it had.

A pipeline whose stages are separate steps (the Prefect flows run one task per stage) keeps the
``Run`` handle (a small frozen dataclass; every state it needs is in the warehouse) and wraps each
step in ``run.guard(stage)`` (``Family.attach`` gives the handle of a run already started).
``Family.write_runs`` is the batch form for the service, whose many one-decision runs land in one
transaction. A new run family (e.g. ``experiment_runs`` with its stage tables) needs no code here: a
migration with a ``run_id`` primary key, an expectation suite per table, and its declaration.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence

import duckdb
import pandas as pd

from acceptgate.store import expectations, warehouse
from acceptgate._util import interrupt

STOP_TIMEOUT = 10.0  # seconds to wait for the live file when recording a stop: the user wants out

# The stages each run is inside right now, innermost last, whichever thread runs them: a stop raised in
# the main thread while a stage runs in another (a Prefect task's) ends the attempt naming that stage.
_RUNNING: dict[str, list[str]] = {}
_RUNNING_LOCK = threading.Lock()

Frames = Mapping[str, pd.DataFrame]
Writer = Callable[[duckdb.DuckDBPyConnection, Frames], int]


# -- preparing the warehouse -------------------------------------------------------

def prepare(path: str | os.PathLike | None = None) -> Path:
    """--warehouse (else $ACCEPTGATE_WAREHOUSE, else data/warehouse.duckdb): check that it is or can
    become a DuckDB file (InvalidInput, exit 2, otherwise) and apply pending migrations."""
    resolved = warehouse.check_path(warehouse.resolve_path(path))
    warehouse.migrate(resolved)
    return resolved


# -- stop requests ---------------------------------------------------------------------------------

# What a stopped CLI says: the runs whose attempt this process recorded, and those it marked 'interrupted'
STARTED: list[str] = []
STOPPED: list[str] = []


def describe(exc: BaseException | str) -> str:
    """The stored failure text; every stop is spelled one way, "interrupted by SIGTERM" (or SIGINT)."""
    if isinstance(exc, str):
        return exc[:2000]
    if interrupt.is_stop(exc):
        number = interrupt.stop_signal(exc)
        try:
            return f"interrupted by {signal.Signals(number).name}" if number else "interrupted"
        except ValueError:
            return f"interrupted by signal {number}"
    return f"{type(exc).__name__}: {exc}"[:2000]


# -- the run --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class StageWrite:
    stage: str
    rows: dict[str, int]
    expectations_checked: int


@dataclass(frozen=True)
class Family:
    """A run family: ``kind`` (the flow recorded with each attempt), its run table (``run_id`` primary
    key; None: the run has no row of its own), its stages in order with the tables each writes, and
    whether a new attempt clears the run's rows of those tables (``clears``; the leak audit's rows
    belong to the runs it scanned, not to the audit). Declared once each, in ``families``."""

    kind: str
    table: str | None
    stages: Mapping[str, tuple[str, ...]] | tuple[tuple[str, tuple[str, ...]], ...]
    clears: bool = True

    def __post_init__(self) -> None:
        # a tuple of pairs: the handle stays hashable and travels between a flow's tasks as it is
        pairs = tuple(self.stages.items()) if isinstance(self.stages, Mapping) else tuple(self.stages)
        object.__setattr__(self, "stages", tuple((stage, tuple(tables)) for stage, tables in pairs))

    @property
    def tables(self) -> tuple[str, ...]:
        """Every stage's tables, in stage order (the run table not included)."""
        return tuple(t for _, tables in self.stages for t in tables)

    def stage_tables(self, stage: str) -> tuple[str, ...]:
        for name, tables in self.stages:
            if name == stage:
                return tables
        raise ValueError(f"{self.kind} has no stage {stage!r} (stages: {', '.join(n for n, _ in self.stages)})")

    # -- the life cycle --

    def attach(self, path: str | os.PathLike, run_id: str) -> "Run":
        """The handle of a run whose attempt was already recorded (a step that only has the run id)."""
        return Run(Path(path), run_id, self)

    def start(self, path: str | os.PathLike, run_id: str, *, row: pd.DataFrame | None = None,
              expectations_dir: str | os.PathLike | None = None) -> "Run":
        """Record a new attempt, then validate and upsert the run's row and clear the run's old stage rows
        (see the module docstring); the row's validation is named after the kind in quarantine."""
        run = self.attach(path, run_id)
        warehouse.begin_attempt(run.path, run_id, flow=self.kind)
        STARTED.append(run_id)
        with run.guard(self.kind):
            if row is not None:
                if self.table is None:
                    raise ValueError(f"{self.kind} runs have no run table for a row")
                expectations.validate_batch(run.path, run_id, self.kind, {self.table: row}, where=expectations_dir)
            with warehouse.transaction(run.path) as con:
                if row is not None:
                    _upsert_run_row(con, self.table, run_id, row)
                warehouse.delete_run_rows(con, run_id, [*(self.tables if self.clears else ()), "run_stages"])
        return run

    @contextlib.contextmanager
    def run(self, path: str | os.PathLike, run_id: str, *, row: pd.DataFrame | None = None,
            publish: bool = True, also_publish: Sequence[str] = (),
            expectations_dir: str | os.PathLike | None = None) -> Iterator["Run"]:
        """``start``; the block's stages; ``finish`` (publish) when it returns, ``fail`` when it raises."""
        handle = self.start(path, run_id, row=row, expectations_dir=expectations_dir)
        with handle.guard():
            yield handle
        handle.finish(publish=publish, also_publish=also_publish)

    def write_runs(self, path: str | os.PathLike, rows: pd.DataFrame, frames: Frames) -> list[str]:
        """Record complete runs in one transaction (the service's many one-decision runs): an attempt per
        run id (ended by ``publish``), the run rows (``rows`` may set ``status``, ``started_at``,
        ``wall_seconds``; status defaults to 'ok') and the frames -- every table of the family, no other
        -- replacing each run's earlier rows. The caller validated the batch; returns the run ids
        (publish them next)."""
        if self.table is None or set(frames) != set(self.tables):
            raise ValueError(f"{self.kind} runs write {sorted(self.tables)}, got {sorted(frames)}")
        run_ids = list(dict.fromkeys(rows["run_id"]))
        with warehouse.transaction(path) as con:
            for run_id in run_ids:  # the attempt log shows these runs like any flow's
                warehouse.begin_attempt(path, run_id, flow=self.kind, con=con)
            marks = ",".join("?" * len(run_ids))
            for t in (self.table, *self.tables, "run_stages"):
                con.execute(f'delete from "{t}" where run_id in ({marks})', run_ids)
            extras = {c: v for c, v in (("status", "'ok'"), ("finished_at", "now()"), ("started_at", "now()"),
                                        ("written_at", "now()")) if c in _columns(con, self.table) and c not in rows}
            _insert(con, self.table, rows, extras)
            for t, frame in frames.items():
                _insert(con, t, frame, {})
        return run_ids


@dataclass(frozen=True)
class Run:
    """A run being recorded. Every state lives in the warehouse (the attempt in run_attempts), so the
    handle may travel between a flow's tasks."""

    path: Path
    run_id: str
    family: Family

    @property
    def kind(self) -> str:
        return self.family.kind

    @property
    def table(self) -> str | None:
        return self.family.table

    # -- stages --

    def write_stage(self, stage: str, frames: Frames, *, related: Frames | None = None,
                    write: Writer | None = None, expectations_dir: str | os.PathLike | None = None) -> StageWrite:
        """Validate the stage's batch, then write it in one transaction. ``frames`` holds exactly the
        stage's tables of the family, and may hold the run's row too (a one-row frame of the run table,
        when the row is known only with the results, as for stats, judge and score): anything else is
        refused (ValueError, nothing written). A failed expectation quarantines the batch, fails the
        run and raises ExpectationFailed."""
        with self.guard(stage):
            expected = self.family.stage_tables(stage)
            tables = {t: f for t, f in frames.items() if t != self.table}
            if set(tables) != set(expected):
                raise ValueError(f"stage {stage} of {self.kind} writes {sorted(expected)}, got {sorted(tables)}")
            run_row = frames.get(self.table) if self.table else None
            checked = expectations.validate_batch(self.path, self.run_id, stage, frames, related=related,
                                                  where=expectations_dir)
            with warehouse.transaction(self.path) as con:
                if run_row is not None:
                    _upsert_run_row(con, self.table, self.run_id, run_row)
                written = write(con, tables) if write else warehouse.replace_run_rows(con, self.run_id, tables)
                warehouse.record_stage(con, self.run_id, stage, written, checked)
            warehouse.pause_point(f"{stage}:committed")
        return StageWrite(stage, {t: len(f) for t, f in tables.items()}, checked)

    @contextlib.contextmanager
    def guard(self, stage: str | None = None) -> Iterator["Run"]:
        """Any exception out of the block ends the attempt ('failed', or 'interrupted' for a stop
        request) naming ``stage`` (or the exception's own ``stage``; with neither, the stage another
        thread is running), then propagates."""
        if stage is not None:
            with _RUNNING_LOCK:
                _RUNNING.setdefault(self.run_id, []).append(stage)
        try:
            yield self
        except BaseException as exc:
            if stage is not None and _stage_of(exc) is None:
                with contextlib.suppress(AttributeError, TypeError):
                    exc.stage = stage  # should this record be lost (a second signal in it), an outer guard names it
            self.fail(exc, _stage_of(exc) or self.running_stage())
            raise
        finally:
            if stage is not None:
                with _RUNNING_LOCK:
                    stages = _RUNNING.get(self.run_id, [])
                    if stage in stages:  # the innermost entry of this name
                        del stages[len(stages) - 1 - stages[::-1].index(stage)]
                    if not stages:
                        _RUNNING.pop(self.run_id, None)

    def running_stage(self) -> str | None:
        """The innermost stage of this run that a thread of this process is inside now, if any."""
        with _RUNNING_LOCK:
            stages = _RUNNING.get(self.run_id)
            return stages[-1] if stages else None

    # -- ends --

    def fail(self, error: BaseException | str, stage: str | None = None) -> str | None:
        """End the running attempt 'failed' or 'interrupted' (and the run's row with it). Does nothing
        when no attempt of the run is running (already ended). Returns the status set, if any. A
        locked live file is not allowed to hide the original error: it is then left to the next
        attempt, which finds this process gone and marks the attempt failed."""
        stop = isinstance(error, BaseException) and interrupt.is_stop(error)
        status = "interrupted" if stop else "failed"
        message = describe(error)
        with contextlib.suppress(warehouse.WarehouseError):
            with warehouse.transaction(self.path, timeout=STOP_TIMEOUT if stop else None) as con:
                ended = warehouse.end_attempt(con, self.run_id, status, stage=stage, failure=message)
                # a run row written outside any attempt (a test, an old warehouse) ends with its stage too
                loose = not ended and self.table and _attempt_number(con, self.run_id) == 0 \
                    and _run_status(con, self.table, self.run_id) == "running"
                if not (ended or loose):
                    return None
                if self.table:
                    _set_run_status(con, self.table, self.run_id, status, stage=stage, failure=message)
            if stop:
                STOPPED.append(self.run_id)
            return status
        return None

    def finish(self, *, publish: bool = True, also_publish: Sequence[str] = (),
               wall_seconds: float | None = None) -> Path | None:
        """The run is complete: its row 'ok', and (``publish``) its rows and ``also_publish``'s in the
        snapshot, the attempt 'ok'. Returns the snapshot's path. A publish that fails fails the run."""
        with self.guard("publish"):
            with warehouse.transaction(self.path) as con:
                if wall_seconds is None:
                    wall_seconds = _attempt_seconds(con, self.run_id)
                if self.table:
                    _set_run_status(con, self.table, self.run_id, "ok", wall_seconds=wall_seconds)
            if not publish:
                return None
            return warehouse.publish(self.path, [self.run_id, *[r for r in also_publish if r != self.run_id]])



# -- publishing ----------------------------------------------------------------------------------

def publish(path: str | os.PathLike, run_ids: Sequence[str] = ()) -> Path:
    """Publish runs already finished (e.g. ``write_runs``'), or with no run ids the run-less tables."""
    return warehouse.publish(path, list(run_ids))


# -- the run family's row -------------------------------------------------------------------------

def _columns(con: duckdb.DuckDBPyConnection, table: str) -> set[str]:
    return {r[0] for r in con.execute("select column_name from duckdb_columns() where table_name = ? "
                                      "and schema_name = 'main' and database_name = current_database()",
                                      [table]).fetchall()}


def _insert(con: duckdb.DuckDBPyConnection, table: str, frame: pd.DataFrame, extras: Mapping[str, str]) -> None:
    if len(frame) == 0:
        return
    view = f"_ledger_{table}"
    con.register(view, frame)
    try:
        more = "".join(f", {sql} as {name}" for name, sql in extras.items())
        con.execute(f'insert into "{table}" by name select *{more} from "{view}"')
    finally:
        with contextlib.suppress(duckdb.Error):  # an aborted transaction refuses; the original error matters
            con.unregister(view)


def _upsert_run_row(con: duckdb.DuckDBPyConnection, table: str, run_id: str, row: pd.DataFrame) -> None:
    """Replace the run's row with ``row`` set 'running'; keeps ``first_started_at`` and counts
    ``attempts`` (the attempt log's count) where the table has them. ``started_at`` is the attempt's
    start, also when the row comes with a later stage's results (now() for a row outside any attempt)."""
    if list(row["run_id"]) != [run_id]:
        raise ValueError(f"the run row of {table} must be one row for run {run_id!r}")
    cols = _columns(con, table)
    extras: dict[str, str] = {}
    old = None
    if "first_started_at" in cols or "attempts" in cols:
        want = [c for c in ("first_started_at", "attempts") if c in cols]
        found = con.execute(f'select {", ".join(want)} from "{table}" where run_id = ?', [run_id]).fetchall()
        old = dict(zip(want, found[0])) if found else None
    con.execute(f'delete from "{table}" where run_id = ?', [run_id])
    row = row.copy()
    for column, sql in (("status", "'running'"), ("started_at", "now()"), ("written_at", "now()")):
        if column in cols:
            extras[column] = sql
    attempt = _attempt_number(con, run_id)
    began = _attempt_start(con, run_id, attempt)
    if began is not None and "started_at" in cols:
        row["started_at"] = began
        del extras["started_at"]
    if "first_started_at" in cols:
        first = old and old.get("first_started_at")
        if first:  # the run's first attempt, kept across attempts
            row["first_started_at"] = pd.Timestamp(first)
        elif began is not None:
            row["first_started_at"] = began
        else:
            extras["first_started_at"] = "now()"
    if "attempts" in cols:
        row["attempts"] = int(attempt or ((old or {}).get("attempts") or 0) + 1)
    _insert(con, table, row.drop(columns=[c for c in extras if c in row.columns]), extras)


def _set_run_status(con: duckdb.DuckDBPyConnection, table: str, run_id: str, status: str, *,
                    stage: str | None = None, failure: str | None = None, wall_seconds: float | None = None) -> None:
    cols = _columns(con, table)
    sets, params = [], []
    for column, value in (("status", status), ("failed_stage", stage), ("failure", failure)):
        if column in cols:
            sets.append(f"{column} = ?")
            params.append(value)
    if "finished_at" in cols:
        sets.append("finished_at = now()")
    if wall_seconds is not None and "wall_seconds" in cols:
        sets.append("wall_seconds = ?")
        params.append(round(wall_seconds, 3))
    if sets:
        con.execute(f'update "{table}" set {", ".join(sets)} where run_id = ?', [*params, run_id])


def _run_status(con: duckdb.DuckDBPyConnection, table: str, run_id: str) -> str | None:
    if "status" not in _columns(con, table):
        return None
    rows = con.execute(f'select status from "{table}" where run_id = ?', [run_id]).fetchall()
    return rows[0][0] if rows else None


def _attempt_number(con: duckdb.DuckDBPyConnection, run_id: str) -> int:
    # fetchall, not fetchone: DuckDB refuses to register a frame while a result is unfinished
    return con.execute(f"select coalesce(max(attempt), 0) from {warehouse.ATTEMPTS_TABLE} where run_id = ?",
                       [run_id]).fetchall()[0][0]


def _attempt_start(con: duckdb.DuckDBPyConnection, run_id: str, attempt: int) -> pd.Timestamp | None:
    rows = con.execute(f"select started_at from {warehouse.ATTEMPTS_TABLE} where run_id = ? and attempt = ?",
                       [run_id, attempt]).fetchall()
    return pd.Timestamp(rows[0][0]) if rows and rows[0][0] is not None else None


def _attempt_seconds(con: duckdb.DuckDBPyConnection, run_id: str) -> float | None:
    rows = con.execute(f"select epoch(now() - started_at) from {warehouse.ATTEMPTS_TABLE} "
                       "where run_id = ? and attempt = ?", [run_id, _attempt_number(con, run_id)]).fetchall()
    return float(rows[0][0]) if rows and rows[0][0] is not None else None


def _stage_of(exc: BaseException | None) -> str | None:
    """The stage an exception names (its own ``stage``, or that of the one it was raised while handling)."""
    for _ in range(8):
        if exc is None:
            return None
        stage = getattr(exc, "stage", None)
        if isinstance(stage, str) and stage:
            return stage
        exc = exc.__context__
    return None
