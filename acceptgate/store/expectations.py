"""Data checks before a stage writes: one expectation suite per table, in ``expectations/<table>.json``.

A suite file is a Great Expectations suite document (``name``, ``expectations``: GE expectation types
with their kwargs, ``meta``) plus ``rules``: the few consistency checks GE has no expectation for on a
pandas frame (a row rule written as an expression, a key that must exist in another table of the
stage, a count that must match another table), evaluated here with pandas. Both are declared in the
file; nothing is checked that the file does not name.

GE cannot validate DuckDB through SQLAlchemy, so each stage validates its pandas frames *before* any
of them is written, in one ephemeral GE context per process (analytics and progress bars off).

``validate_batch(path, run_id, stage, frames)`` is what a stage of a flow calls: when any frame fails,
the whole batch goes to the warehouse's ``quarantine`` table (one row per table: every failed
expectation and the rows as JSON), nothing of it reaches the stage's tables or the snapshot, and
ExpectationFailed names the stage and the expectation (the CLI's exit 1).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import sys
import threading
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from acceptgate._util import boundedjson
from acceptgate._util.resources import data_dir
from acceptgate._util.settings import env_name, settings
from acceptgate._util.errors import InvalidInput

EXPECTATIONS_DIR = data_dir("acceptgate.expectations")
ENV_DIR = env_name("expectations")
PARAMETERS_FILE = "_parameters.json"  # allowed values, declared once; suites refer to them as {"$PARAMETER": name}
SHOW_UNEXPECTED = 5


class ExpectationFailed(Exception):
    """A stage's rows broke an expectation; nothing of that stage was written.

    ``failures`` lists every failed (table, expectation, details) of the batch when it was checked
    whole (``validate_batch``); ``quarantined`` is the number of its rows kept in ``quarantine``.
    """

    def __init__(self, stage: str, expectation: str, details: str, *, table: str = "",
                 failures: list[tuple[str, str, str]] | None = None, quarantined: int | None = None) -> None:
        self.stage = stage
        self.expectation = expectation
        self.details = details
        self.table = table
        self.failures = failures or [(table, expectation, details)]
        self.quarantined = quarantined
        super().__init__(f"stage {stage!r}: expectation {expectation} failed: {details}")

    def message(self) -> str:
        """The CLI's one-line account: stage, expectation, what broke it, where the batch went."""
        text = (f"stopped at stage {self.stage!r}: expectation {self.expectation} failed: {self.details}. "
                f"Nothing of stage {self.stage!r} was written or published")
        if self.quarantined is not None:
            text += (f"; the batch ({self.quarantined} rows, {len(self.failures)} failed expectation"
                     f"{'s' if len(self.failures) != 1 else ''}) is in the live warehouse's quarantine table")
        return text + "."


@dataclass(frozen=True)
class Check:
    """One declared check: a GE expectation (engine 'gx') or a pandas-level rule (engine 'pandas')."""

    engine: str
    type: str
    kwargs: dict[str, Any]
    meta: dict[str, Any] = field(default_factory=dict)

    def describe(self, table: str) -> str:
        keys = ("column", "column_list", "column_A", "column_B", "columns", "expression", "table")
        shown = ", ".join(f"{k}={self.kwargs[k]!r}" for k in keys if k in self.kwargs)
        condition = self.kwargs.get("row_condition")
        if isinstance(condition, dict) and condition.get("type") == "comparison":
            shown += f", where {condition['column']['name']} {condition['operator']} {condition['parameter']!r}"
        elif condition is not None:
            shown += f", where {condition}"
        return f"{table}.{self.type}({shown})"


@dataclass(frozen=True)
class Suite:
    table: str
    path: Path
    checks: tuple[Check, ...]


def directory(path: str | os.PathLike | None = None) -> Path:
    return Path(path or settings().expectations or EXPECTATIONS_DIR)


def load_suite(table: str, where: str | os.PathLike | None = None) -> Suite:
    """Read and check ``<dir>/<table>.json``; a malformed file is InvalidInput naming file and field."""
    path = directory(where) / f"{table}.json"
    try:
        doc = boundedjson.load_path(path)
    except OSError as exc:
        raise InvalidInput(f"no expectation suite for table {table!r}: {exc.strerror}", source=str(path)) from None
    except boundedjson.JSONInputError as exc:
        raise InvalidInput(str(exc), source=str(path)) from None
    if not isinstance(doc, dict) or doc.get("name") != table:
        raise InvalidInput(f"the suite's name must be the table's name {table!r}", source=str(path), field="name")
    unknown = set(doc) - {"name", "expectations", "rules", "meta", "notes"}
    if unknown:
        raise InvalidInput(f"unknown keys {sorted(unknown)}", source=str(path))
    checks = []
    for engine, key in (("gx", "expectations"), ("pandas", "rules")):
        items = doc.get(key, [])
        if not isinstance(items, list):
            raise InvalidInput("must be a list", source=str(path), field=key)
        for i, item in enumerate(items):
            if not isinstance(item, dict) or not isinstance(item.get("type"), str) \
                    or not isinstance(item.get("kwargs", {}), dict):
                raise InvalidInput("each entry needs a 'type' string and a 'kwargs' object",
                                   source=str(path), record=f"{key}[{i}]")
            if engine == "pandas" and item["type"] not in RULES:
                raise InvalidInput(f"unknown rule {item['type']!r}; valid rules: {', '.join(sorted(RULES))}",
                                   source=str(path), record=f"{key}[{i}]", field="type")
            checks.append(Check(engine, item["type"], dict(item.get("kwargs", {})), dict(item.get("meta", {}))))
    if not checks:
        raise InvalidInput("declares no expectations", source=str(path))
    return Suite(table, path, tuple(checks))


def load_parameters(where: str | os.PathLike | None = None) -> dict[str, Any]:
    """The shared allowed-value sets that suites reference with ``{"$PARAMETER": "<name>"}``."""
    path = directory(where) / PARAMETERS_FILE
    try:
        doc = boundedjson.load_path(path)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise InvalidInput(f"cannot read: {exc.strerror}", source=str(path)) from None
    except boundedjson.JSONInputError as exc:
        raise InvalidInput(str(exc), source=str(path)) from None
    if not isinstance(doc, dict):
        raise InvalidInput("must be an object of named parameters", source=str(path))
    return {k: v for k, v in doc.items() if not k.startswith("_")}  # "_comment" keys are notes


# -- Great Expectations --------------------------------------------------------------------------

# Imported by GE at start-up for the renderer and the distribution tests of three expectations that no
# suite here declares: about 1.5 s of CPU in every process that validates (altair 0.5 s, scipy.stats 1 s,
# measured with ``python -X importtime``). They are imported on first use instead.
DEFERRED_IMPORTS = ("altair", "scipy.stats")


class _DeferredModule(types.ModuleType):
    """Stands in ``sys.modules`` for a module until an attribute of it is first read; then the real
    module is imported (and replaces this one in ``sys.modules``) and the read answered from it.
    Unlike ``importlib.util.LazyLoader`` it has its own ``__spec__`` (None), so the import system's
    look at a module already in ``sys.modules`` does not load it."""

    _lock = threading.RLock()  # a module's import may read another deferred one

    def __getattr__(self, attr: str) -> Any:  # only for attributes this module does not have itself
        with _DeferredModule._lock:
            real = self.__dict__.get("_deferred_real")
            if real is None:
                if sys.modules.get(self.__name__) is self:
                    del sys.modules[self.__name__]
                real = importlib.import_module(self.__name__)
                self.__dict__["_deferred_real"] = real
        return getattr(real, attr)


# GE's SQL and AWS back ends: its compatibility layer imports sqlalchemy (installed for Prefect's server)
# and botocore when they are present and works without them; no suite here validates a database or S3.
# GE is imported as if they were absent (about 0.4 s of CPU of its 1.5 s import, 2026-12-07); a module that
# is already imported is left alone, and once GE is in, they import as usual for anyone else.
ABSENT_FOR_GE = ("sqlalchemy", "botocore", "boto3")


def _import_ge():
    hidden = [name for name in ABSENT_FOR_GE if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # `import name` raises ImportError
    try:
        import great_expectations
    finally:
        for name in hidden:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]
    return great_expectations


def _defer_imports(names: tuple[str, ...] = DEFERRED_IMPORTS) -> None:
    for name in names:
        if name not in sys.modules and importlib.util.find_spec(name.partition(".")[0]) is not None:
            sys.modules[name] = _DeferredModule(name)


class _Gx:
    """One ephemeral GE context per process, with one pandas asset per table."""

    _lock = threading.Lock()
    _instance: "_Gx | None" = None

    def __init__(self) -> None:
        os.environ["GX_ANALYTICS_ENABLED"] = "false"  # must be set before GE is imported
        _defer_imports()
        gx = _import_ge()
        from great_expectations.data_context.types.base import ProgressBarsConfig
        from great_expectations.expectations.expectation_configuration import ExpectationConfiguration

        self.gx = gx
        self.configuration = ExpectationConfiguration
        # GE logs its ephemeral-context housekeeping at INFO; that is noise next to a run's progress.
        for name in ("great_expectations", "great_expectations.data_context.types.base"):  # the latter sets INFO
            logging.getLogger(name).setLevel(logging.WARNING)
        self.context = gx.get_context(mode="ephemeral")
        self.context.variables.progress_bars = ProgressBarsConfig(globally=False)
        self.source = self.context.data_sources.add_pandas("acceptgate")
        self.batches: dict[str, Any] = {}

    @classmethod
    def get(cls) -> "_Gx":
        with cls._lock:
            if cls._instance is None:
                cls._instance = _Gx()
            return cls._instance

    def batch_definition(self, table: str):
        if table not in self.batches:
            asset = self.source.add_dataframe_asset(table)
            self.batches[table] = asset.add_batch_definition_whole_dataframe(table)
        return self.batches[table]

    def validate(self, suite: Suite, frame, parameters: dict[str, Any]) -> list[tuple[Check, dict[str, Any]]]:
        """Failed GE checks of the suite on the frame, each with GE's result dict."""
        checks = [c for c in suite.checks if c.engine == "gx"]
        if not checks:
            return []
        try:
            # meta.index ties each result back to its check: GE reorders results.
            expectations = [self.configuration(type=c.type, kwargs=c.kwargs, meta={"index": i}).to_domain_obj()
                            for i, c in enumerate(checks)]
        except Exception as exc:  # GE raises several types for an unknown type or bad kwargs
            raise InvalidInput(f"invalid Great Expectations expectation: {exc}", source=str(suite.path)) from None
        gx_suite = self.gx.ExpectationSuite(name=suite.table, expectations=expectations)
        with self._lock:
            batch = self.batch_definition(suite.table).get_batch(batch_parameters={"dataframe": frame})
            # Every check passing needs only GE's verdicts (BOOLEAN_ONLY: about half the CPU of SUMMARY);
            # a batch with a failure is validated again for the counts and examples that describe it.
            result = batch.validate(gx_suite, result_format="BOOLEAN_ONLY", expectation_parameters=parameters)
            if not result.success:
                result = batch.validate(gx_suite, result_format="SUMMARY", expectation_parameters=parameters)
        failed = []
        for res in result.results:
            if res.success:
                continue
            info = dict(res.result or {})
            if res.exception_info and res.exception_info.get("raised_exception"):
                info["exception"] = res.exception_info.get("exception_message")
            failed.append((int(res.expectation_config.meta["index"]), info))
        return [(checks[i], info) for i, info in sorted(failed, key=lambda f: f[0])]


def _describe_gx_failure(info: dict[str, Any]) -> str:
    if info.get("exception"):
        return f"raised {info['exception']}"
    if "unexpected_count" in info:
        sample = info.get("partial_unexpected_list") or []
        return (f"{info['unexpected_count']} of {info.get('element_count', '?')} rows unexpected, "
                f"e.g. {sample[:SHOW_UNEXPECTED]!r}")
    if "observed_value" in info:
        return f"observed {info['observed_value']!r}"
    return json.dumps(info, default=str)[:500]


# -- pandas-level rules --------------------------------------------------------------------------
# Each returns None when the frame satisfies the rule, else a short description of what broke it.
# ``where`` filters this frame and ``ref_where`` the other table first (pandas query expressions).

def _filtered(frame, where: str | None):
    return frame.query(where, engine="python") if where and len(frame) else frame


def _keys(frame, columns: list[str]) -> list[tuple]:
    return list(frame[columns].astype(object).itertuples(index=False, name=None))


def _rule_rows_satisfy(frame, related, expression: str, where: str | None = None) -> str | None:
    """Every row satisfies a pandas expression over its columns (e.g. ``cases_passed <= cases_total``)."""
    rows = _filtered(frame, where)
    if len(rows) == 0:
        return None
    ok = rows.eval(expression, engine="python")
    bad = rows[~ok.astype(bool)]
    if len(bad) == 0:
        return None
    return f"{len(bad)} of {len(rows)} rows break it, e.g. {_show_rows(bad)}"


def _rule_keys_exist_in(frame, related, columns: list[str], table: str, ref_columns: list[str] | None = None,
                        where: str | None = None, ref_where: str | None = None) -> str | None:
    """Every key of this frame exists in another table of the run (a foreign key, before writing)."""
    have = set(_keys(_filtered(_related(related, table), ref_where), ref_columns or columns))
    keys = _keys(_filtered(frame, where), columns)
    missing = [k for k in keys if k not in have]
    if not missing:
        return None
    return f"{len(missing)} of {len(keys)} keys not in {table}, e.g. {missing[:SHOW_UNEXPECTED]!r}"


def _rule_keys_not_in(frame, related, columns: list[str], table: str, ref_columns: list[str] | None = None,
                      where: str | None = None, ref_where: str | None = None) -> str | None:
    """No key of this frame exists in another table (e.g. an excluded task is not also imported)."""
    have = set(_keys(_filtered(_related(related, table), ref_where), ref_columns or columns))
    keys = _keys(_filtered(frame, where), columns)
    found = [k for k in keys if k in have]
    if not found:
        return None
    return f"{len(found)} of {len(keys)} keys also in {table}, e.g. {found[:SHOW_UNEXPECTED]!r}"


def _rule_column_equals_count_in(frame, related, column: str, table: str, keys: list[str],
                                 ref_keys: list[str] | None = None, where: str | None = None,
                                 ref_where: str | None = None) -> str | None:
    """``column`` equals the number of rows of another table with the same key (counts consistent)."""
    ref = _filtered(_related(related, table), ref_where)
    counts: dict[tuple, int] = {}
    for key in _keys(ref, ref_keys or keys):
        counts[key] = counts.get(key, 0) + 1
    rows = _filtered(frame, where)
    bad = [(row[:-1], int(row[-1]), counts.get(row[:-1], 0)) for row in _keys(rows, keys + [column])
           if int(row[-1]) != counts.get(row[:-1], 0)]
    if not bad:
        return None
    return (f"{len(bad)} of {len(rows)} rows disagree with {table} (key, {column}, rows in {table}), "
            f"e.g. {bad[:SHOW_UNEXPECTED]!r}")


def _rule_column_equals_sum_in(frame, related, column: str, table: str, sum_column: str, keys: list[str],
                               ref_keys: list[str] | None = None, where: str | None = None,
                               ref_where: str | None = None) -> str | None:
    """``column`` equals the sum of ``sum_column`` over another table's rows with the same key (0 if none)."""
    ref = _filtered(_related(related, table), ref_where)
    sums: dict[tuple, int] = {}
    for row in _keys(ref, (ref_keys or keys) + [sum_column]):
        sums[row[:-1]] = sums.get(row[:-1], 0) + int(row[-1])
    rows = _filtered(frame, where)
    bad = [(row[:-1], int(row[-1]), sums.get(row[:-1], 0)) for row in _keys(rows, keys + [column])
           if int(row[-1]) != sums.get(row[:-1], 0)]
    if not bad:
        return None
    return (f"{len(bad)} of {len(rows)} rows disagree with {table} (key, {column}, sum of {sum_column}), "
            f"e.g. {bad[:SHOW_UNEXPECTED]!r}")


def _rule_row_count_equals_rows_in(frame, related, table: str, where: str | None = None,
                                   ref_where: str | None = None) -> str | None:
    """As many rows here as in another table (e.g. one gauge check per suite)."""
    mine = len(_filtered(frame, where))
    theirs = len(_filtered(_related(related, table), ref_where))
    return None if mine == theirs else f"{mine} rows here, {theirs} in {table}"


def _show_rows(rows) -> str:
    records = rows.head(SHOW_UNEXPECTED).to_dict("records")
    return repr([{k: (v if not isinstance(v, str) or len(v) <= 80 else v[:77] + "...") for k, v in r.items()}
                 for r in records])


def _related(related: Mapping[str, Any] | None, table: str):
    if not related or table not in related:
        raise ValueError(f"rule needs the frame of table {table!r}; pass it in related=")
    return related[table]


RULES: dict[str, Callable[..., str | None]] = {
    "expect_rows_to_satisfy": _rule_rows_satisfy,
    "expect_keys_to_exist_in": _rule_keys_exist_in,
    "expect_keys_not_to_exist_in": _rule_keys_not_in,
    "expect_column_to_equal_row_count_in": _rule_column_equals_count_in,
    "expect_column_to_equal_sum_in": _rule_column_equals_sum_in,
    "expect_row_count_to_equal_rows_in": _rule_row_count_equals_rows_in,
}


# -- entry points --------------------------------------------------------------------------------

def failures(table: str, frame, *, related: Mapping[str, Any] | None = None,
             where: str | os.PathLike | None = None) -> list[tuple[Check, str]]:
    """Every check of ``expectations/<table>.json`` the frame fails, with what broke it (GE checks
    first, then the rules, each in file order). A rule that cannot run is a broken suite
    (InvalidInput), unless a GE check already failed: then the frame's shape is the likely cause and
    the rule is reported as failed."""
    suite = load_suite(table, where)
    failed = [(check, _describe_gx_failure(info))
              for check, info in _Gx.get().validate(suite, frame, load_parameters(where))]
    for check in suite.checks:
        if check.engine != "pandas":
            continue
        try:
            problem = RULES[check.type](frame, related, **check.kwargs)
        except (KeyError, TypeError, SyntaxError, NameError, ValueError) as exc:
            if not failed:
                raise InvalidInput(f"rule {check.describe(table)} cannot run: {type(exc).__name__}: {exc}",
                                   source=str(suite.path)) from None
            problem = f"could not be checked: {type(exc).__name__}: {exc}"
        if problem:
            failed.append((check, problem))
    return failed


def validate(table: str, frame, *, stage: str | None = None, related: Mapping[str, Any] | None = None,
             where: str | os.PathLike | None = None) -> int:
    """Check ``frame`` against ``expectations/<table>.json``; raise ExpectationFailed naming the first
    failing check (GE checks before rules). Returns how many checks passed.

    ``related`` maps table names to frames that rules may refer to (the stage's other frames and
    the frames of earlier stages of the same run).
    """
    stage = stage or table
    failed = failures(table, frame, related=related, where=where)
    if failed:
        (check, details), others = failed[0], [c for c, _ in failed[1:]]
        _raise(stage, table, check, details, others)
    return len(load_suite(table, where).checks)


def _raise(stage: str, table: str, check: Check, details: str, others: list[Check]) -> None:
    if others:
        details += f" (and {len(others)} more: {', '.join(c.describe(table) for c in others)})"
    raise ExpectationFailed(stage, check.describe(table), details, table=table)


def validate_stage(stage: str, frames: Mapping[str, Any], *, related: Mapping[str, Any] | None = None,
                   where: str | os.PathLike | None = None) -> int:
    """Validate every frame of a stage (all before any write); returns the number of checks passed."""
    scope = {**(related or {}), **frames}
    return sum(validate(table, frame, stage=stage, related=scope, where=where) for table, frame in frames.items())


def validate_batch(path: str | os.PathLike, run_id: str, stage: str, frames: Mapping[str, Any], *,
                   related: Mapping[str, Any] | None = None, where: str | os.PathLike | None = None) -> int:
    """Validate a stage's whole batch before any of it is written. All pass: returns the number of
    checks. Any fails: the batch goes to the ``quarantine`` table of the live warehouse at ``path``
    (every frame of the stage, each with its failed expectations) and ExpectationFailed is raised,
    naming the first failed expectation and listing all of them."""
    scope = {**(related or {}), **frames}
    found = {table: failures(table, frame, related=scope, where=where) for table, frame in frames.items()}
    if not any(found.values()):
        return sum(len(load_suite(table, where).checks) for table in frames)
    listed = [(table, check.describe(table), details) for table, failed in found.items() for check, details in failed]
    rows = quarantine(path, run_id, stage, frames, {t: [(c.describe(t), d) for c, d in f] for t, f in found.items()})
    table, expectation, details = listed[0]
    if len(listed) > 1:
        details += f" (and {len(listed) - 1} more: {', '.join(e for _, e, _ in listed[1:])})"
    raise ExpectationFailed(stage, expectation, details, table=table, failures=listed, quarantined=rows)


def quarantine(path: str | os.PathLike, run_id: str, stage: str, frames: Mapping[str, Any],
               failed: Mapping[str, list[tuple[str, str]]]) -> int:
    """Keep a batch that failed its expectations in ``quarantine`` (one transaction, one row per
    table; a later attempt's batch of the same stage replaces it). Returns the rows kept."""
    from acceptgate.store import warehouse  # the warehouse does not depend on this module; keep it that way

    with warehouse.transaction(path) as con:
        attempt = warehouse.current_attempt(con, run_id)
        for table, frame in frames.items():
            listed = [{"expectation": e, "details": d} for e, d in failed.get(table, [])]
            con.execute("insert or replace into quarantine values (?, ?, ?, ?, ?, ?, ?, now())",
                        [run_id, attempt, stage, table, json.dumps(listed), len(frame),
                         frame.to_json(orient="records", date_format="iso", default_handler=str)])
    return sum(len(f) for f in frames.values())
