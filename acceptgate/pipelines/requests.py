"""One typed request per run kind: what a command line, a flow, a deployment's parameters and the nightly
chain ask a run to do. A flow takes its request as its one parameter (Prefect validates it); a command
builds the same request from its options; a deployment's parameters are the request's fields, nested
under ``request``.

Every request forbids unknown fields (an unknown parameter is an error naming it) and checks its values
(known arms, backends, profiles, matchers, data sets; positive limits). ``build`` turns a validation
error into InvalidInput naming the field (or the command-line option the field came from).
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Annotated, Any, Mapping, TypeVar

from pydantic import (AfterValidator, BaseModel, ConfigDict, Field, PositiveInt, ValidationError, field_validator,
                      model_validator)

from acceptgate._util import runids
from acceptgate._util.errors import InvalidInput
from acceptgate._util.hashing import sha256_text
from acceptgate.datasets import registry as datasets
from acceptgate.datasets.task import SUITE_KINDS
from acceptgate.gates import ARMS, DEFAULT_MAX_FPR_ATTACK
from acceptgate.judge.embed import EMBEDDERS
from acceptgate.leak.matcher import DEFAULT as DEFAULT_MATCHER
from acceptgate.leak.matcher import check_name as check_matcher
from acceptgate.pipelines import daskcluster
from acceptgate.pipelines.daskcluster import DaskCluster
from acceptgate.sandbox import backend as backends
from acceptgate.sandbox.backend import Limits
from acceptgate.scoring.profiles import DEFAULT as DEFAULT_PROFILE
from acceptgate.scoring.profiles import PROFILES
from acceptgate.judge.backends import BACKENDS as JUDGE_BACKENDS
from acceptgate.leak.audit import BATCH_RECORDS
from acceptgate.stats.paired import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES
from acceptgate.v4v.certify import Settings as CertifySettings

DEFAULT_ARMS = ("conform", "off")  # the gates of a chain that names none


def _known_arms(arms: list[str] | None) -> list[str] | None:
    if arms is None:
        return None
    bad = [a for a in arms if a not in ARMS]
    if bad:
        raise ValueError(f"unknown arm(s) {bad}; valid arms: {', '.join(ARMS)}")
    return list(dict.fromkeys(arms))


def _run_ids(values: list[str] | None) -> list[str] | None:
    bad = [r for r in values or () if not runids.RUN_ID.match(r)]
    if bad:
        raise ValueError(f"invalid run id(s) {bad}")
    return values


def _known(name: str | None, valid: tuple[str, ...] | list[str], what: str) -> str | None:
    if name is not None and name not in valid:
        raise ValueError(f"unknown {what} {name!r}; valid: {', '.join(valid)}")
    return name


def _chat(value: Any):
    """A live model's ChatConfig (``acceptgate.sources.openai_chat``), or its fields as a mapping; httpx is
    imported only when there is one."""
    if value is None:
        return None
    from acceptgate.sources.openai_chat import ChatConfig

    if isinstance(value, ChatConfig):
        return value
    if isinstance(value, Mapping):
        try:
            return ChatConfig(**value)
        except TypeError as exc:
            raise ValueError(f"not a chat model's settings: {exc}") from None
    raise ValueError("a chat model's settings (base_url, model, api_key_env, ...)")


def _cluster(value: Any) -> DaskCluster | None:
    try:
        return daskcluster.parse(value)
    except InvalidInput as exc:
        raise ValueError(exc.message) from None


# The checked names, as types: a field of one of these is refused (naming what is known) when unknown.
Arms = Annotated[list[str] | None, AfterValidator(_known_arms)]
Profile = Annotated[str, AfterValidator(lambda name: _known(name, PROFILES, "scoring profile"))]
Embedder = Annotated[str, AfterValidator(lambda name: _known(name, EMBEDDERS, "embedder"))]
DataSet = Annotated[str, AfterValidator(lambda name: _known(name, datasets.NAMES, "data set"))]
JudgeBackend = Annotated[str, AfterValidator(lambda name: _known(name, JUDGE_BACKENDS, "judge backend"))]
SuiteKind = Annotated[str, AfterValidator(lambda name: _known(name, SUITE_KINDS, "suite kind"))]


AUDIT_PIPELINE = "audit/1"  # the audit pipeline's version: in its runs' rows and their derived ids
DEFAULT_TASKS_PER_SHARD = 4  # gate and certify: a shard is minutes of sandbox work on a few tasks
DEFAULT_RECORDS_PER_SHARD = 2000  # leak backfill: whole runs, about this many records per shard

class Request(BaseModel):
    """What every request shares: unknown fields refused, values frozen once checked."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    warehouse: str | None = None  # the DuckDB file (None: $ACCEPTGATE_WAREHOUSE or the default)


class SandboxRequest(Request):
    """A run that executes programs: the sandbox backend is one of the installed ones."""

    backend: str = "local"

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, name: str) -> str:
        return _known(name, backends.names(), "backend")


class Sharded(BaseModel):
    """Work that can go to Dask in shards (``dask``: N local workers or a TLS scheduler with credentials)."""

    dask: DaskCluster | None = None
    shard_size: PositiveInt = DEFAULT_TASKS_PER_SHARD

    @field_validator("dask", mode="before")
    @classmethod
    def _cluster(cls, value: Any) -> DaskCluster | None:
        return _cluster(value)


class ShardedRequest(Sharded, SandboxRequest):
    """A run that executes programs, on Dask when asked."""


class NamedRun(BaseModel):
    """The user's run id (``--run-id``), checked; None: derived from the inputs' hashes and the request's
    settings by the request's ``derive_run_id`` (the same inputs give the same id, so a re-run replaces
    its rows)."""

    run_id: str | None = None

    @field_validator("run_id")
    @classmethod
    def _run_id(cls, run_id: str | None) -> str | None:
        if run_id is not None and not runids.RUN_ID.match(run_id):
            raise ValueError("a run id is 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit")
        return run_id

    def name_run(self, *digests: Any) -> tuple[str, str]:
        """(run id, origin): the user's ('user'), else ``derive_run_id(*digests)`` ('derived')."""
        if self.run_id is not None:
            return self.run_id, "user"
        return self.derive_run_id(*digests), "derived"

    def derive_run_id(self, *digests: Any) -> str:
        raise NotImplementedError(f"{type(self).__name__} names no derived run")


class AuditRequest(ShardedRequest, NamedRun):
    """``acceptgate audit``: import a data set, gauge its suites, execute references and wrong samples."""

    limit: PositiveInt | None = None
    dataset: DataSet = "humaneval"
    data_path: str | None = None

    def derive_run_id(self, source_sha256: str) -> str:
        """From the data file's content (not its path), the task limit, the backend and the pipeline."""
        return runids.derive_run_id("audit", {"dataset": self.dataset, "source_sha256": source_sha256,
                                              "limit": self.limit, "backend": self.backend,
                                              "pipeline": AUDIT_PIPELINE})


class GateRequest(ShardedRequest, NamedRun):
    """``acceptgate gate``: the arms on the tasks (a data set imported now, or a suites directory)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    arms: Annotated[list[str], Field(min_length=1), AfterValidator(_known_arms)]
    source: str
    humanevalplus: str | None = None
    suites_dir: str | None = None
    dataset: DataSet | None = None
    dataset_path: str | None = None
    per_task: int = Field(5, ge=1, le=5)  # SYSTEM.md section 3 caps a gate at 5
    limit: PositiveInt | None = None
    workers: PositiveInt = 2
    chat_config: Any = None  # the live model of an openai source, a ChatConfig (the key: an env variable)
    limits: Limits = Limits()
    strict: bool = False
    profile: Profile = DEFAULT_PROFILE
    gauge: bool = True
    certify: bool = True
    max_fpr_attack: float | None = Field(DEFAULT_MAX_FPR_ATTACK, ge=0, le=100)



    @field_validator("chat_config", mode="before")
    @classmethod
    def _chat(cls, value: Any):
        return _chat(value)


    def derive_run_id(self, tasks_sha256: str) -> str:
        """From the source (a samples file's content, else its name), the tasks' suites, the arms, draws
        per task, backend and pipeline; a run without the gauge check or the certification precondition,
        or with another FPR_h limit, is another run (the ids of runs with the defaults stay as they were)."""
        from acceptgate.gates import run as gate_run  # pandas: only when a gate runs

        inputs = {"source": gate_run.source_sha256(self.source) or self.source, "tasks": tasks_sha256,
                  "arms": list(self.arms), "per_task": self.per_task, "backend": self.backend,
                  "pipeline": gate_run.PIPELINE}
        if not self.gauge:
            inputs["gauge"] = gate_run.GAUGE_SKIPPED
        if not self.certify:
            inputs["certify"] = gate_run.CERTIFY_SKIPPED
        max_fpr_attack = self.max_fpr_attack if self.certify else None
        if max_fpr_attack != DEFAULT_MAX_FPR_ATTACK:
            inputs["max_fpr_attack"] = max_fpr_attack
        return runids.derive_run_id("gate", inputs)

    @model_validator(mode="after")
    def _one_task_source(self) -> "GateRequest":
        given = [n for n in ("humanevalplus", "suites_dir", "dataset") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of humanevalplus, suites_dir, dataset")
        if self.source.startswith("openai") and self.chat_config is None:
            raise ValueError("the openai source needs its model (base URL and model name)")
        return self


class CertifyRequest(ShardedRequest, NamedRun):
    """``acceptgate certify``: a suites directory, its data set's gold programs, optional real samples."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    suites_dir: str
    dataset: str
    samples: str | None = None
    limit: PositiveInt | None = None
    task_ids: list[str] | None = None
    settings: CertifySettings = CertifySettings()
    # external verifiers besides settings.verifiers (plain fields, for deployments; the CLI puts them in settings)
    verifier_commands: list[str] = []
    verifier_mounts: list[str] = []
    evalplus_venv: str | None = None
    gauge: bool = True

    def derive_run_id(self, inputs_sha256: str, settings: CertifySettings) -> str:
        """From the materials' hash (gold, suites, samples), the run's settings as certified (external
        verifiers added, held-out part on; ``settings.key()``), the backend and the pipeline."""
        from acceptgate.v4v.store import PIPELINE  # pandas: only when a certification runs

        key = json.dumps(settings.key(), sort_keys=True)
        return "certify-" + sha256_text(f"{PIPELINE} {inputs_sha256} {key} {self.backend}")[:16]


class ScoreRequest(SandboxRequest, NamedRun):
    """``acceptgate score``: a samples file scored against one suite kind of a suites directory."""

    suites_dir: str
    samples: str
    suite: SuiteKind
    workers: PositiveInt = 1
    fail_fast: bool = True  # False: --all-cases
    limits: Limits = Limits()
    strict: bool = False
    gauge: bool = True
    profile: Profile = DEFAULT_PROFILE
    quiet: bool = False  # no progress lines

    def derive_run_id(self, row: Mapping[str, Any]) -> str:
        """From what the results depend on: the run row's (``acceptgate.pipelines.score.run_row``) inputs'
        contents and scoring settings, not its paths (``suites_from``, ``samples_from``) nor the version
        that scored."""
        return runids.derive_run_id("score", {k: v for k, v in row.items()
                                              if k not in ("suites_from", "samples_from", "acceptgate_version")})


class LeakAuditRequest(SandboxRequest):
    """``acceptgate leak-audit``: scan gate runs (and history files) for the hidden suites' material."""

    suites_dir: str | None = None
    humanevalplus: str | None = None
    # run ids and arms as the records name them: a history file's are its own, not this tool's
    run_ids: list[str] | None = None
    arms: list[str] | None = None
    history: list[str] = []
    matcher: str = DEFAULT_MATCHER
    rescan: bool = False

    @field_validator("matcher")
    @classmethod
    def _known_matcher(cls, name: str) -> str:
        return check_matcher(name)


def leak_run_id(kind: str, matcher: str, selection, material_sha256: str, records_sha256: str,
                history_sha256: str | None) -> str:
    """A leak audit's or backfill's run id (``kind``), from what is known before its first batch is
    scanned: the selection (``acceptgate.leak.audit.Selection``), the hidden material's hash, the
    warehouse records' hash, the history files' records (hashed as they were spooled), the matcher and
    the scanner."""
    from acceptgate.leak.audit import SCANNER_VERSION

    return runids.derive_run_id("leak", {
        "kind": kind, "matcher": matcher, "scanner": SCANNER_VERSION,
        "selection": [sorted(selection.run_ids or ()), str(selection.since), str(selection.until),
                      sorted(selection.arms or ()), selection.warehouse_runs],
        "material": material_sha256, "warehouse_records": records_sha256, "history": history_sha256})


class LeakBackfillRequest(Sharded, LeakAuditRequest):
    """``acceptgate backfill``: the leak audit over a date range of history, in resumable batches."""

    since: str | None = None  # a date (YYYY-MM-DD, midnight UTC) or an ISO 8601 time
    until: str | None = None
    include_warehouse: bool = True
    batch_records: PositiveInt = BATCH_RECORDS
    shard_size: PositiveInt = DEFAULT_RECORDS_PER_SHARD  # records (whole runs) per shard

    @field_validator("since", "until", mode="before")
    @classmethod
    def _iso(cls, value: Any) -> str | None:
        return value.isoformat() if isinstance(value, (dt.date, dt.datetime)) else value


class StatsRequest(Request):
    """``acceptgate stats``: paired statistics over a gate run (arms against a baseline) or a judge run."""

    gate_run: str | None = None
    judge_run: str | None = None
    audit_judge_run: str | None = None
    baseline: str = "off"
    arms: Arms = None
    seed: int = Field(0, ge=0, lt=2 ** 63)
    resamples: int = Field(DEFAULT_RESAMPLES, ge=100)
    confidence: float = Field(DEFAULT_CONFIDENCE, ge=0.5, lt=1)


    @model_validator(mode="after")
    def _main_judge(self) -> "StatsRequest":
        if self.audit_judge_run is not None and self.judge_run is None:
            raise ValueError("audit_judge_run needs judge_run (the main judge)")
        return self

    def settings(self):
        from acceptgate.stats.pipeline import Settings  # numpy and pandas: only when statistics run

        return Settings(seed=self.seed, resamples=self.resamples, confidence=self.confidence)

    def derive_run_id(self, source_run_id: str, input_sha256: str) -> str:
        """From the source run (the gate or main judge run the statistics are over, as resolved), the
        hash of every input value, the audit judge run and the resampling settings."""
        return runids.derive_run_id("stats", {
            "kind": "judge" if self.judge_run is not None else "gate", "source": source_run_id,
            "inputs": input_sha256, "seed": self.seed, "resamples": self.resamples,
            "confidence": self.confidence, "also": self.audit_judge_run or ""})


class JudgeRequest(Request):
    """``acceptgate judge``: the over-defence judge on trajectory records (jsonl files)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    records: str
    cards: str
    memory: str
    replay: str | None = None
    human_labels: str | None = None
    backend: JudgeBackend = "rules"
    embedder: Embedder = "minilm"
    strict: bool = False
    chat_config: Any = None  # the openai backend's model, a ChatConfig

    @field_validator("chat_config", mode="before")
    @classmethod
    def _chat(cls, value: Any):
        return _chat(value)



    @model_validator(mode="after")
    def _backend_inputs(self) -> "JudgeRequest":
        if self.backend == "replay" and not self.replay:
            raise ValueError("the replay backend needs replay (recorded outputs)")
        if self.backend == "openai" and self.chat_config is None:
            raise ValueError("the openai backend needs its model (base URL and model name)")
        return self

    def derive_run_id(self, hashes: Mapping[str, str | None]) -> str:
        """From the input files' contents (records, cards, memory, replay, labels; None: not given), the
        backend as the run names it (a chat endpoint with its model) and the encoder's full name (the
        model and its implementation, which the short name does not pin)."""
        from acceptgate.judge import backends, embed

        return runids.derive_run_id("judge", {"backend": backends.label(self.backend, self.chat_config),
                                              "embedder": embed.label(self.embedder), **hashes})

    def inputs(self):
        from acceptgate.judge.run import Inputs  # pandas: only when a judge runs

        return Inputs(records=self.records, cards=self.cards, memory=self.memory, replay=self.replay,
                      human_labels=self.human_labels)


class NightlyPerRun(BaseModel):
    """What a run of the served nightly may set (how much or which part of the work): nothing that decides
    where data or secrets go."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    limit: PositiveInt | None = None
    arms: Arms = None
    profile: Profile = DEFAULT_PROFILE
    judge_embedder: Embedder = "minilm"





class NightlyRequest(NightlyPerRun, ShardedRequest):
    """The nightly chain: what its stages need (each stage's own request is built from it,
    ``acceptgate.pipelines.schedule``). ``gate_source = "openai"`` gates a live model (``gate_base_url``,
    ``gate_model``; the key from the environment variable ``gate_api_key_env``, never a parameter)."""

    gate_source: str | None = None
    gate_suites: str | None = None
    gate_humanevalplus: str | None = None
    gate_base_url: str | None = None
    gate_model: str | None = None
    gate_api_key_env: str = "OPENAI_API_KEY"
    certify_dataset: str | None = None
    certify_samples: str | None = None
    judge_records: str | None = None
    judge_cards: str | None = None
    judge_memory: str | None = None
    judge_backend: str | None = None
    judge_replay: str | None = None
    judge_human_labels: str | None = None
    no_certify: bool = False
    max_fpr_attack: float | None = Field(None, ge=0, le=100)

    @model_validator(mode="after")
    def _wrong_not_absent(self) -> "NightlyRequest":
        """Parameters that are wrong rather than absent fail the night before any stage runs."""
        if (self.gate_source or "").startswith("openai") and not (self.gate_base_url and self.gate_model):
            raise ValueError("the openai gate source needs gate_base_url and gate_model")
        if self.judge_backend is not None and self.judge_backend not in ("rules", "replay"):
            raise ValueError("the nightly judge stage runs the rules or replay backend")
        return self


class BackfillPerRun(BaseModel):
    """Which history to backfill: explicit run ids and/or a date range (UTC days, inclusive), optionally
    restricted to gate arms -- all a run of the served backfill may set. At least one of run_ids, since,
    until must be given."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_ids: list[str] = []
    since: dt.date | None = None
    until: dt.date | None = None
    arms: Annotated[list[str], AfterValidator(_known_arms)] = []


    @field_validator("run_ids")
    @classmethod
    def _run_ids(cls, values: list[str]) -> list[str]:
        return _run_ids(values)

    @model_validator(mode="after")
    def _some_selection(self) -> "BackfillPerRun":
        if not self.run_ids and self.since is None and self.until is None:
            raise ValueError("give run_ids, or a date range (since/until), or both")
        if self.since and self.until and self.since > self.until:
            raise ValueError(f"since {self.since} is after until {self.until}")
        return self


class HistoryBackfillRequest(BackfillPerRun, SandboxRequest):
    """The history backfill: select past runs, then run the backfill stages over them on the tasks the
    gates used (``gate_suites`` or ``gate_humanevalplus``)."""

    gate_suites: str | None = None
    gate_humanevalplus: str | None = None


R = TypeVar("R", bound=BaseModel)


def build(kind: type[R], values: Mapping[str, Any], *, options: Mapping[str, str] | None = None,
          record: str | None = None) -> R:
    """``kind(**values)``, or InvalidInput naming the first wrong field (as its command-line option when
    ``options`` maps it) and what is wrong with it; an unknown field is named with the fields there are."""
    try:
        return kind(**values)
    except ValidationError as exc:
        err = exc.errors()[0]
        name = ".".join(str(p) for p in err["loc"]) or None
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = f"no such parameter; a {kind.__name__} takes {', '.join(kind.model_fields)}"
        field = (options or {}).get(str(err["loc"][0]), name) if err["loc"] else name
        raise InvalidInput(message, record=record or f"{kind.__name__}", field=field) from None
