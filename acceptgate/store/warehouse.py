"""The DuckDB warehouse: numbered migrations, short write transactions, run attempts, a snapshot for
analysts that only ever holds complete runs.

DuckDB lets one process open a database file for writing and then refuses every other process, even
read-only ones. So a writer here holds the live file only for one short transaction at a time
(retrying with backoff while another process holds it), and analysts never open it: they read the
snapshot ``<name>.snapshot.duckdb`` next to it, which ``publish`` replaces by temp file + atomic
rename. A reader that has the old snapshot open keeps reading that file (its inode) unchanged until it
reconnects; a new connection opens the new one (in another process: within one process DuckDB
shares an open database per path, so close every connection to see a newer publish). Readers never
block the writer, nor each other.

Every flow records its runs through one life cycle, ``acceptgate.pipelines.ledger`` (start: an attempt
in ``run_attempts`` before anything is written and the run's row; each stage validated, then written
in one transaction; finish: publish; or fail / interrupted). This module holds the pieces it uses:
``begin_attempt``, ``record_stage``, ``end_attempt``, ``replace_run_rows``, ``publish``.
Attempt states: ``running``, ``ok`` (published), ``failed``, ``interrupted`` (a stop request: SIGINT,
SIGTERM).

What ``publish(path, run_id)`` puts in the snapshot: every table with a ``run_id`` column holds, for
``run_id``, the live file's rows as they are now, and for every other run the rows the previous
snapshot held (the version that run last published). So a run that is still writing, failed, or was
killed is never visible, and re-running a published run id that then fails loses nothing that was
published. Tables without a ``run_id`` column and the attempt log ``run_attempts`` are copied whole;
``quarantine`` is never published. The copy is made while holding the live file and renamed before
letting go of it, so publishes of several writer processes are serialized. The snapshot is written in
DuckDB storage version ``SNAPSHOT_STORAGE_VERSION`` so the DuckDB CLI from PyPI (``duckdb-cli``) can
open it too.

Crash safety: each stage's rows are one transaction (DuckDB's WAL replays only committed ones), a new
attempt of a run id replaces that run's rows (primary keys forbid duplicates), and a killed attempt
is found by the next ``begin_attempt`` on this host (its process is gone) and marked failed.
``pause_point(name)`` is a test hook: with ``ACCEPTGATE_TEST_PAUSE_AT=name`` the process stops itself
(SIGSTOP) there so a test can SIGKILL it at a known point.

Schema: ``sql/NNN_name.sql`` files applied in order, each recorded in ``schema_migrations`` with its
sha256, so an old warehouse upgrades in place; ``sql/views/*.sql`` (``create or replace view``) are
re-applied after the migrations.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping, Sequence

import duckdb

from acceptgate._util.resources import data_dir
from acceptgate._util.settings import Settings, env_name, settings
from acceptgate._util.hashing import sha256_text
from acceptgate._util.errors import InvalidInput
from acceptgate._util.interrupt import pid_alive

SQL_DIR = data_dir("acceptgate.sql")
DEFAULT_PATH = Settings.model_fields["warehouse"].default
ENV_PATH = env_name("warehouse")
ENV_LOCK_TIMEOUT = env_name("warehouse_lock_timeout")
# DuckDB's buffer pool grows towards 80 % of RAM by default, so a writer's memory grew with the number of
# rows it had written or published (a 100,000-record backfill's publish alone added ~400 MiB). A writer
# caps it; what does not fit spills to the database's temp directory.
ENV_WRITER_MEMORY = env_name("warehouse_memory")
SNAPSHOT_SUFFIX = ".snapshot.duckdb"
MIGRATION_NAME = re.compile(r"^(\d{3})_([a-z0-9_]+)\.sql$")
DUCKDB_MAGIC = b"DUCK"  # bytes 8..12 of every DuckDB database file
# The snapshot's storage format: the newest the DuckDB CLI on PyPI (duckdb-cli 1.5.6) reads; the
# Python package (2.x) writes a newer one by default.
SNAPSHOT_STORAGE_VERSION = "v1.5.0"
ATTEMPTS_TABLE = "run_attempts"
NEVER_PUBLISHED = ("quarantine",)  # batches that failed their expectations stay in the live file
COPIED_WHOLE = (ATTEMPTS_TABLE, "schema_migrations")  # logs, not a run's results


class WarehouseError(RuntimeError):
    """The warehouse cannot be used as asked (locked, migrations inconsistent, ...)."""


class WarehouseLocked(WarehouseError):
    """Another process kept the live file open for longer than the lock timeout."""


class MigrationError(WarehouseError):
    pass


# -- paths ---------------------------------------------------------------------------------------

def resolve_path(path: str | os.PathLike | None = None) -> Path:
    """--warehouse, else $ACCEPTGATE_WAREHOUSE, else data/warehouse.duckdb (relative to the cwd)."""
    chosen = path or settings().warehouse
    return Path(chosen).expanduser()


def snapshot_path(path: str | os.PathLike) -> Path:
    path = Path(path)
    stem = path.name[: -len(".duckdb")] if path.name.endswith(".duckdb") else path.name
    return path.with_name(stem + SNAPSHOT_SUFFIX)


def check_path(path: str | os.PathLike) -> Path:
    """Raise InvalidInput unless ``path`` is (or can become) a writable DuckDB file. Creates no file
    but may create the parent directory."""
    path = Path(path)
    if path.is_dir():
        raise InvalidInput("is a directory, not a DuckDB file", source=str(path), field="--warehouse")
    if path.exists():
        if not os.access(path, os.R_OK | os.W_OK):
            raise InvalidInput("not readable and writable", source=str(path), field="--warehouse")
        with open(path, "rb") as fh:
            head = fh.read(12)
        if head[8:12] != DUCKDB_MAGIC:  # an empty file is no database either
            raise InvalidInput("exists but is not a DuckDB database", source=str(path), field="--warehouse")
        return path
    parent = path.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidInput(f"cannot create its directory: {exc.strerror}", source=str(path),
                           field="--warehouse") from None
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InvalidInput("its directory is not writable", source=str(path), field="--warehouse")
    return path


def lock_timeout(value: float | None = None) -> float:
    return settings().warehouse_lock_timeout if value is None else value


# -- connections ---------------------------------------------------------------------------------

def _is_lock_error(exc: Exception) -> bool:
    return "lock" in str(exc).lower() and isinstance(exc, duckdb.IOException)


@contextlib.contextmanager
def connect(path: str | os.PathLike, *, read_only: bool = False,
            timeout: float | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open the file, waiting (with backoff) while another process holds it; close on exit.

    Keep the block short: while it is open no other process can read or write the file.
    """
    path = Path(path)
    limit = lock_timeout(timeout)
    started = time.monotonic()
    delay = 0.05
    while True:
        try:
            con = duckdb.connect(str(path), read_only=read_only)
            if not read_only:
                _cap_memory(con)
            break
        except duckdb.IOException as exc:
            if not _is_lock_error(exc):
                raise WarehouseError(f"{path}: {exc}") from exc
            waited = time.monotonic() - started
            if waited >= limit:
                holder = re.search(r"held in (.*)$", str(exc).splitlines()[0])
                raise WarehouseLocked(
                    f"{path} stayed locked by another process for {waited:.0f} s"
                    f"{' (' + holder.group(1).split('. See')[0] + ')' if holder else ''}. DuckDB allows one "
                    f"process at a time on the live file: close analyst sessions on it and query "
                    f"{snapshot_path(path).name} instead, or raise {ENV_LOCK_TIMEOUT}.") from exc
            time.sleep(min(delay, max(0.0, limit - waited)))
            delay = min(delay * 2, 2.0)
    try:
        yield con
    finally:
        con.close()


@contextlib.contextmanager
def transaction(path: str | os.PathLike, *, timeout: float | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """One write transaction: committed if the block returns, rolled back if it raises."""
    with connect(path, timeout=timeout) as con:
        con.execute("begin transaction")
        try:
            yield con
        except BaseException:
            con.execute("rollback")
            raise
        con.execute("commit")


# -- migrations ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    path: Path

    @property
    def sql(self) -> str:
        return self.path.read_text(encoding="utf-8")

    @property
    def sha256(self) -> str:
        """Of the statements, not the comments or layout: editing a comment is not a schema change."""
        return sha256_text(normalized_sql(self.sql))


def normalized_sql(sql: str) -> str:
    """SQL without ``--`` comments and with whitespace runs collapsed (quoted text kept as is)."""
    out, i, n = [], 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch in "'\"":  # copy a quoted string or identifier whole ('' and "" escape themselves)
            j = i + 1
            while j < n and not (sql[j] == ch and (j + 1 >= n or sql[j + 1] != ch)):
                j += 2 if sql[j] == ch else 1
            out.append(sql[i:j + 1])
            i = j + 1
        elif sql.startswith("--", i):
            while i < n and sql[i] != "\n":
                i += 1
        elif ch.isspace():
            while i < n and sql[i].isspace():
                i += 1
            out.append(" ")
        else:
            out.append(ch)
            i += 1
    return "".join(out).strip()


def migrations(sql_dir: Path = SQL_DIR) -> list[Migration]:
    """Every ``NNN_name.sql`` in sql_dir, in version order; two files with one number are an error."""
    if not sql_dir.is_dir():
        raise MigrationError(f"no migrations directory at {sql_dir}")
    found: dict[int, Migration] = {}
    for path in sorted(sql_dir.glob("*.sql")):
        m = MIGRATION_NAME.match(path.name)
        if not m:
            continue
        version = int(m.group(1))
        if version in found:
            raise MigrationError(f"two migrations numbered {version:03d}: {found[version].path.name}, {path.name}")
        found[version] = Migration(version, path.stem, path)
    return [found[v] for v in sorted(found)]


def views(sql_dir: Path = SQL_DIR) -> list[Path]:
    return sorted((sql_dir / "views").glob("*.sql"))


_MIGRATIONS_TABLE = """
create table if not exists schema_migrations (
    version     integer primary key,
    name        varchar not null,
    sha256      varchar not null,
    applied_at  timestamptz not null default now()
)"""


def migrate(path: str | os.PathLike, *, sql_dir: Path = SQL_DIR, timeout: float | None = None) -> list[str]:
    """Apply pending migrations (each in its own transaction, recorded), then (re)create the views.

    Returns the names applied now. A recorded migration whose file changed since is an error: a
    schema change needs a new number.
    """
    pending = migrations(sql_dir)
    applied_now: list[str] = []
    with connect(path, timeout=timeout) as con:
        con.execute(_MIGRATIONS_TABLE)
        done = {v: (n, h) for v, n, h in con.execute("select version, name, sha256 from schema_migrations").fetchall()}
        for mig in pending:
            if mig.version in done:
                name, digest = done[mig.version]
                if digest != mig.sha256:
                    raise MigrationError(
                        f"migration {mig.path.name} changed after it was applied to {path} "
                        f"(recorded as {name}), so this warehouse's schema is not the one the code "
                        "expects: put schema changes in a new numbered file (a development warehouse "
                        "can simply be deleted and rebuilt)")
                continue
            con.execute("begin transaction")
            try:
                con.execute(mig.sql)
                con.execute("insert into schema_migrations (version, name, sha256) values (?, ?, ?)",
                            [mig.version, mig.name, mig.sha256])
            except duckdb.Error as exc:
                con.execute("rollback")
                raise MigrationError(f"migration {mig.path.name} failed on {path}: {exc}") from exc
            con.execute("commit")
            applied_now.append(mig.name)
        con.execute("begin transaction")
        try:
            for view in views(sql_dir):
                con.execute(view.read_text(encoding="utf-8"))
        except duckdb.Error as exc:
            con.execute("rollback")
            raise MigrationError(f"view {view.name} failed on {path}: {exc}") from exc
        con.execute("commit")
    return applied_now


def applied_migrations(path: str | os.PathLike) -> list[tuple[int, str]]:
    with connect(path, read_only=True) as con:
        return [tuple(r) for r in con.execute("select version, name from schema_migrations order by version").fetchall()]


# -- writes --------------------------------------------------------------------------------------

def _insert_frame(con: duckdb.DuckDBPyConnection, table: str, frame) -> int:
    """INSERT ... BY NAME from a pandas frame: columns are matched by name, so order does not matter."""
    if len(frame) == 0:
        return 0
    view = f"_frame_{table}"
    con.register(view, frame)
    try:
        con.execute(f'insert into "{table}" by name select * from "{view}"')
    finally:
        with contextlib.suppress(duckdb.Error):  # an aborted transaction refuses; the original error matters
            con.unregister(view)
    return len(frame)


def replace_run_rows(con: duckdb.DuckDBPyConnection, run_id: str, frames: Mapping[str, object]) -> int:
    """Within an open transaction: delete the run's rows in each table, insert the frame's rows."""
    written = 0
    for table, frame in frames.items():
        con.execute(f'delete from "{table}" where run_id = ?', [run_id])
        written += _insert_frame(con, table, frame)
    return written


def delete_run_rows(con: duckdb.DuckDBPyConnection, run_id: str, tables: list[str]) -> None:
    for table in tables:
        con.execute(f'delete from "{table}" where run_id = ?', [run_id])


def row_counts(path: str | os.PathLike, tables: list[str], *, run_id: str | None = None) -> dict[str, int]:
    with connect(path, read_only=True) as con:
        out = {}
        for table in tables:
            where, params = ("where run_id = ?", [run_id]) if run_id else ("", [])
            out[table] = con.execute(f'select count(*) from "{table}" {where}', params).fetchone()[0]
        return out


def duplicate_keys(path: str | os.PathLike, table: str) -> int:
    """Rows beyond the first per primary key (0 in a healthy warehouse; the key is enforced)."""
    with connect(path, read_only=True) as con:
        cols = [r[0] for r in con.execute(
            "select unnest(constraint_column_names) from duckdb_constraints() "
            "where table_name = ? and constraint_type = 'PRIMARY KEY'", [table]).fetchall()]
        if not cols:
            raise WarehouseError(f"table {table} has no primary key")
        keys = ", ".join(f'"{c}"' for c in cols)
        return con.execute(f'select coalesce(sum(n - 1), 0) from (select count(*) as n from "{table}" '
                           f'group by {keys})').fetchone()[0]


# -- run attempts -------------------------------------------------------------------------------

def pause_point(name: str) -> None:
    """Test hook: stop this process (SIGSTOP) at ``name`` when $ACCEPTGATE_TEST_PAUSE_AT lists it.

    A crash test waits for the stopped state and SIGKILLs the process there: a kill at a named point
    of a stage, not at a time that depends on the machine's load.
    """
    if name in settings().test_pause_at:
        os.kill(os.getpid(), signal.SIGSTOP)


def _mark_dead_attempts(con: duckdb.DuckDBPyConnection) -> int:
    """Attempts left 'running' by a process of this host that no longer exists: killed or crashed."""
    host = socket.gethostname()
    stale = [(r, a, pid) for r, a, pid in con.execute(
        f"select run_id, attempt, pid from {ATTEMPTS_TABLE} where status = 'running' and host = ?",
        [host]).fetchall() if pid != os.getpid() and not pid_alive(pid)]
    for run_id, attempt, pid in stale:
        con.execute(f"update {ATTEMPTS_TABLE} set status = 'failed', finished_at = now(), failure = ? "
                    "where run_id = ? and attempt = ?",
                    [f"process {pid} on {host} ended without finishing the run (killed or crashed)",
                     run_id, attempt])
    return len(stale)


def begin_attempt(path: str | os.PathLike, run_id: str, *, flow: str, timeout: float | None = None,
                  con: duckdb.DuckDBPyConnection | None = None) -> int:
    """Record a new attempt of ``run_id`` as 'running' (before the run writes anything); returns its
    number. Marks the attempts of dead processes on this host 'failed' first. Pass ``con`` to do it
    inside an open transaction."""
    if con is None:
        with transaction(path, timeout=timeout) as own:
            return begin_attempt(path, run_id, flow=flow, con=own)
    _mark_dead_attempts(con)
    attempt = con.execute(f"select coalesce(max(attempt), 0) + 1 from {ATTEMPTS_TABLE} where run_id = ?",
                          [run_id]).fetchone()[0]
    con.execute(f"insert into {ATTEMPTS_TABLE} (run_id, attempt, flow, status, host, pid, started_at) "
                "values (?, ?, ?, 'running', ?, ?, now())", [run_id, attempt, flow, socket.gethostname(),
                                                             os.getpid()])
    return attempt


def current_attempt(con: duckdb.DuckDBPyConnection, run_id: str) -> int:
    """The number of the run's newest attempt (0 when it has none)."""
    return con.execute(f"select coalesce(max(attempt), 0) from {ATTEMPTS_TABLE} where run_id = ?",
                       [run_id]).fetchone()[0]


def record_stage(con: duckdb.DuckDBPyConnection, run_id: str, stage: str, rows_written: int,
                 expectations_checked: int) -> None:
    """Within a stage's write transaction, after its rows: note the stage in run_stages and in the
    attempt (``last_stage``), then pause point ``<stage>:written`` (rows written, not committed).
    Callers add ``pause_point(f"{stage}:committed")`` after the transaction."""
    con.execute("insert or replace into run_stages values (?, ?, ?, ?, now())",
                [run_id, stage, rows_written, expectations_checked])
    con.execute(f"update {ATTEMPTS_TABLE} set last_stage = ? where run_id = ? and attempt = ?",
                [stage, run_id, current_attempt(con, run_id)])
    pause_point(f"{stage}:written")


def end_attempt(con: duckdb.DuckDBPyConnection, run_id: str, status: str, *, stage: str | None = None,
                failure: str | None = None) -> bool:
    """Within a transaction: end the run's newest attempt with ``status`` (failed | interrupted) when it
    is still running. Returns whether it was running."""
    attempt = current_attempt(con, run_id)
    row = con.execute(f"select status from {ATTEMPTS_TABLE} where run_id = ? and attempt = ?",
                      [run_id, attempt]).fetchone()
    if row is None or row[0] != "running":
        return False
    con.execute(f"update {ATTEMPTS_TABLE} set status = ?, failed_stage = ?, failure = ?, finished_at = now() "
                "where run_id = ? and attempt = ?", [status, stage, (failure or "")[:2000] or None, run_id, attempt])
    return True


# -- snapshot ------------------------------------------------------------------------------------

def publish(path: str | os.PathLike, run_id: str | Sequence[str], *, timeout: float | None = None) -> Path:
    """The run (or runs) is complete: publish its rows to ``<name>.snapshot.duckdb`` and end its
    attempt 'ok'.

    The new snapshot has the live file's schema; for the published runs the live rows, for every other
    run the rows of the previous snapshot (see the module docstring). Built in a temp file while holding
    the live file, then renamed over the snapshot (atomic); readers of the old file are not disturbed.
    Several run ids at once (the gate service publishes its decisions in batches) cost one copy.
    Returns the snapshot's path.
    """
    run_ids = [run_id] if isinstance(run_id, str) else list(dict.fromkeys(run_id))
    path = Path(path)
    target = snapshot_path(path)
    _remove_stale_temps(target)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    try:
        with connect(path, timeout=timeout) as con:
            source = con.execute("select current_database()").fetchone()[0]
            con.execute(f"attach '{_sql_str(tmp)}' as {_SNAPSHOT_ALIAS} "
                        f"(storage_version '{SNAPSHOT_STORAGE_VERSION}')")
            previous = None
            if target.exists():
                con.execute(f"attach '{_sql_str(target)}' as {_PREVIOUS_ALIAS} (read_only)")
                previous = _PREVIOUS_ALIAS
            try:
                con.execute(f'copy from database "{source}" to {_SNAPSHOT_ALIAS} (schema)')
                _fill_snapshot(con, source, previous, run_ids)
                for rid in run_ids:
                    con.execute(f"update {_SNAPSHOT_ALIAS}.{ATTEMPTS_TABLE} set status = 'ok', finished_at = now(), "
                                "published_at = now() where run_id = ? and attempt = ? and status = 'running'",
                                [rid, current_attempt(con, rid)])
                con.execute(f"create table {_SNAPSHOT_ALIAS}.snapshot_info "
                            "(published_at timestamptz, source varchar, run_id varchar)")
                for rid in run_ids or [None]:  # a publish of run-less tables only names no run
                    con.execute(f"insert into {_SNAPSHOT_ALIAS}.snapshot_info values (now(), ?, ?)",
                                [str(path.resolve()), rid])
                con.execute(f"checkpoint {_SNAPSHOT_ALIAS}")  # everything in the file, nothing in a WAL
            finally:
                con.execute(f"detach {_SNAPSHOT_ALIAS}")
                if previous:
                    con.execute(f"detach {previous}")
            pause_point("publish:copied")
            os.replace(tmp, target)  # still holding the live file: publishes never interleave
            _fsync_directory(target.parent)  # the rename itself survives a power cut
            for rid in run_ids:
                # only a running attempt ends 'ok' (re-publishing an old run, e.g. with its leak rows, leaves its log alone)
                con.execute(f"update {ATTEMPTS_TABLE} set status = 'ok', finished_at = now(), published_at = now() "
                            "where run_id = ? and attempt = ? and status = 'running'", [rid, current_attempt(con, rid)])
    finally:
        tmp.unlink(missing_ok=True)
        Path(str(tmp) + ".wal").unlink(missing_ok=True)
    return target


def _cap_memory(con: duckdb.DuckDBPyConnection) -> None:
    limit = settings().warehouse_memory
    try:
        con.execute("set memory_limit = ?", [limit])
    except duckdb.Error as exc:
        con.close()
        raise InvalidInput(f"not a DuckDB memory size ({exc})", field=ENV_WRITER_MEMORY) from exc


# An analyst session's DuckDB settings (``open_snapshot``); lock_configuration last keeps them as given.
ANALYST_SESSION = {"enable_external_access": False, "autoinstall_known_extensions": False,
                   "autoload_known_extensions": False, "lock_configuration": True}


@contextlib.contextmanager
def open_snapshot(path: str | os.PathLike | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only analyst session on the published snapshot of the warehouse at ``path`` (resolved
    like --warehouse); never the live file, so it neither waits for nor blocks a writer. The
    connection reads the snapshot as it was when opened, however many publishes follow.

    The session reaches nothing but the snapshot: DuckDB's external access is off (no file read or
    written by COPY, EXPORT, ATTACH, read_text/read_csv/glob..., no extension installed or loaded) and
    its configuration is locked, so no query can turn either back on."""
    target = snapshot_path(resolve_path(path))
    if not target.is_file():
        raise InvalidInput("no snapshot published yet: a run publishes one when it succeeds "
                           "(acceptgate audit or acceptgate gate)", source=str(target), field="--warehouse")
    try:
        con = duckdb.connect(str(target), read_only=True, config=ANALYST_SESSION)
    except duckdb.Error as exc:
        raise WarehouseError(f"{target}: {exc}") from exc
    try:
        yield con
    finally:
        con.close()


def _fill_snapshot(con: duckdb.DuckDBPyConnection, source: str, previous: str | None, run_ids: list[str]) -> None:
    new = _SNAPSHOT_ALIAS
    con.execute("create or replace temp table _published_runs (run_id varchar)")
    for r in run_ids:
        con.execute("insert into _published_runs values (?)", [r])
    # Each database's tables and columns in one query: asked table by table (duckdb_columns() lists every
    # attached database's columns at each call) they cost 1.3 s of CPU per publish of a 60-table warehouse.
    tables = _table_columns(con, source)
    kept = _table_columns(con, previous) if previous else {}
    for table, columns in tables.items():
        if table in NEVER_PUBLISHED:
            con.execute(f'drop table {new}."{table}"')  # the schema copy made it; it stays empty, so drop it
            continue
        if table in COPIED_WHOLE or "run_id" not in columns:
            con.execute(f'insert into {new}."{table}" select * from "{source}"."{table}"')
            continue
        con.execute(f'insert into {new}."{table}" select * from "{source}"."{table}" '
                    "where run_id in (select run_id from _published_runs)")
        if table in kept:
            shared = ", ".join(f'"{c}"' for c in columns if c in set(kept[table]))
            con.execute(f'insert into {new}."{table}" ({shared}) select {shared} from {previous}."{table}" '
                        "where run_id is null or run_id not in (select run_id from _published_runs)")


def _table_columns(con: duckdb.DuckDBPyConnection, database: str) -> dict[str, list[str]]:
    """The database's tables (main schema, by name; views not included) and their columns in order."""
    out: dict[str, list[str]] = {}
    for table, column in con.execute(
            "select c.table_name, c.column_name from duckdb_columns() c join duckdb_tables() t "
            "on c.database_name = t.database_name and c.schema_name = t.schema_name and c.table_name = t.table_name "
            "where c.database_name = ? and c.schema_name = 'main' order by c.table_name, c.column_index",
            [database]).fetchall():
        out.setdefault(table, []).append(column)
    return out


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_stale_temps(target: Path) -> None:
    """Temp snapshots left by a publish that was killed (their process is gone)."""
    for stale in target.parent.glob(f".{target.name}.*.tmp*"):
        pid = stale.name[len(target.name) + 2:].split(".")[0]
        if pid.isdigit() and not pid_alive(int(pid)):
            stale.unlink(missing_ok=True)


_SNAPSHOT_ALIAS = "acceptgate_snapshot_copy"  # not a name a live file (its stem) is likely to have
_PREVIOUS_ALIAS = "acceptgate_snapshot_previous"


def _sql_str(path: Path) -> str:
    return str(path).replace("'", "''")
