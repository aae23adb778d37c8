"""What the scheduled service runs: the nightly chain of stages and the backfill request.

Prefect-free (the flows in ``flows/nightly.py`` and ``flows/history_backfill.py`` sequence these).

The nightly chain is a declared list of stages by name. Which flow implements a stage is known only
to the flows layer (``flows/stage_flows.py``): the core never names nor imports a flow. A stage whose
flow is not installed is skipped there by an explicit check that is logged and recorded in the summary
-- never by catching an ImportError raised from inside a flow. A stage's flow receives the nightly
parameters its signature names (``warehouse``, ``backend``, ``limit``, ``arms``...), so a stage added
later needs its line here and its flow's line there.
"""

from __future__ import annotations

import datetime as dt
import inspect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from acceptgate.store import warehouse
from acceptgate._util.errors import InvalidInput

NIGHTLY_CRON = "30 2 * * *"  # UTC


@dataclass(frozen=True)
class Skip:
    """A stage not run, and why (shown in the run's log and summary)."""

    reason: str


@dataclass(frozen=True)
class Stage:
    name: str
    what: str
    # extra keyword arguments from the parameters; returns Skip when the parameters do not ask for it
    arguments: Callable[[dict[str, Any]], dict[str, Any] | Skip] = lambda params: {}
    # the parameter later stages read this stage's run id from (e.g. stats reads tonight's gate run)
    produces: str | None = None

    def call_arguments(self, fn: Callable[..., Any], params: dict[str, Any]) -> dict[str, Any] | Skip:
        """The parameters the flow's signature names, plus the stage's own arguments."""
        extra = self.arguments(params)
        if isinstance(extra, Skip):
            return extra
        accepted = inspect.signature(getattr(fn, "fn", fn)).parameters
        common = {k: v for k, v in params.items() if k in accepted and v is not None}
        given = {**common, **extra}
        missing = [n for n, p in accepted.items() if p.default is inspect.Parameter.empty
                   and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and n not in given]
        if missing:
            return Skip(f"its flow needs {', '.join(missing)}, which the chain does not give yet: add an "
                        f"arguments function to its Stage in acceptgate/pipelines/schedule.py")
        return given


def _codet_path(source: str | None) -> str | None:
    """The samples file of a replayed source (codet:PATH), which certify also uses as real samples."""
    if source and source.startswith("codet:"):
        return source.split(":", 1)[1]
    return None


def missing_files(params: dict[str, Any]) -> Skip | None:
    """A stage whose input file does not exist is skipped, naming the file (deployment defaults name
    files under data/ that a machine may not have yet)."""
    paths = [params.get("gate_humanevalplus"), params.get("certify_dataset"), params.get("certify_samples"),
             _codet_path(params.get("gate_source")), params.get("gate_suites")]
    gone = [p for p in paths if p and not Path(p).exists()]
    if gone:
        return Skip(f"{gone[0]} not found (put the file there, or give the parameter another path)")
    return None


def chat_config(params: dict[str, Any]):
    """The live model of an ``openai`` gate source: ``gate_base_url`` and ``gate_model`` (the key is read
    from the environment variable ``gate_api_key_env``, never a parameter: parameters are stored in
    Prefect). None for a replayed source."""
    if not (params.get("gate_source") or "").startswith("openai"):
        return None
    from acceptgate.sources.openai_chat import ChatConfig

    if not (params.get("gate_base_url") and params.get("gate_model")):
        raise InvalidInput("the openai gate source needs gate_base_url and gate_model", field="gate_source")
    return ChatConfig(base_url=params["gate_base_url"], model=params["gate_model"],
                      api_key_env=params.get("gate_api_key_env") or "OPENAI_API_KEY")


def check_parameters(params: dict[str, Any]) -> None:
    """Parameters that are wrong rather than absent (InvalidInput): checked before any stage runs."""
    chat_config(params)
    if params.get("judge_backend") == "openai":
        raise InvalidInput("the nightly judge stage runs the rules or replay backend", field="judge_backend")


def _gate_arguments(params: dict[str, Any]) -> dict[str, Any] | Skip:
    if not params.get("gate_source"):
        return Skip("no gate_source parameter (codet:PATH, evalplus:PATH or openai with gate_base_url and "
                    "gate_model): nothing to gate")
    if not (params.get("gate_suites") or params.get("gate_humanevalplus")):
        return Skip("no gate_suites or gate_humanevalplus parameter: no tasks to gate")
    if missing_files(params):
        return missing_files(params)
    # the suites directory when there is one (the chain imports gate_humanevalplus into it once)
    suites = params.get("gate_suites")
    args = {"source": params["gate_source"], "suites_dir": suites,
            "humanevalplus": None if suites else params.get("gate_humanevalplus"), "arms": list(params.get("arms") or ["conform", "off"]),
            "profile": params.get("profile") or "default",
            # tonight's certify stage ran before this one: every task needs its certification record
            "certify": not params.get("no_certify")}
    if params.get("max_fpr_attack") is not None:
        args["max_fpr_attack"] = float(params["max_fpr_attack"])
    chat = chat_config(params)
    return {**args, "chat_config": chat} if chat else args


def _certify_arguments(params: dict[str, Any]) -> dict[str, Any] | Skip:
    """The HumanEval+ suites the gates use, their jsonl (the gold programs: certify_dataset, by default
    the gate_humanevalplus file) and real samples (certify_samples, by default the codet gate source)."""
    dataset = params.get("certify_dataset") or params.get("gate_humanevalplus")
    if missing_files(params):
        return missing_files(params)
    if not (params.get("gate_suites") and dataset):
        return Skip("no HumanEval+ tasks (gate_humanevalplus, or gate_suites with certify_dataset): "
                    "nothing to certify against")
    return {"suites_dir": params["gate_suites"], "dataset": dataset,
            "samples": params.get("certify_samples") or _codet_path(params.get("gate_source")),
            "limit": params.get("limit")}


def _hidden_material(params: dict[str, Any]) -> dict[str, Any] | Skip:
    """The leak audit reads the hidden suites from the tasks the gates used."""
    if not (params.get("gate_suites") or params.get("gate_humanevalplus")):
        return Skip("no gate_suites or gate_humanevalplus parameter: no hidden suites to scan for")
    if missing_files(params):
        return missing_files(params)
    suites = params.get("gate_suites")  # imported once by the chain when only the HumanEval+ file is given
    return {"suites_dir": suites, "humanevalplus": None if suites else params.get("gate_humanevalplus")}


def _stats_arguments(params: dict[str, Any]) -> dict[str, Any] | Skip:
    """Statistics over tonight's gate run (each arm against OFF)."""
    if not params.get("gate_run"):
        return Skip("no gate run tonight (the gates stage did not run): nothing new to compare")
    if "off" not in (params.get("arms") or ["conform", "off"]):
        return Skip("tonight's gate run has no OFF arm to compare the arms with")
    return {"gate_run": params["gate_run"], "judge_run": None}


JUDGE_FILES = ("judge_records", "judge_cards", "judge_memory", "judge_replay", "judge_human_labels")


def _judge_arguments(params: dict[str, Any]) -> dict[str, Any] | Skip:
    """The over-defence judge on the trajectory records the parameters name (jsonl files)."""
    if not params.get("judge_records"):
        return Skip("no judge_records parameter (with judge_cards and judge_memory): nothing to judge")
    if not (params.get("judge_cards") and params.get("judge_memory")):
        return Skip("judge_records needs judge_cards and judge_memory too")
    gone = [params[k] for k in JUDGE_FILES if params.get(k) and not Path(params[k]).exists()]
    if gone:
        return Skip(f"{gone[0]} not found (put the file there, or give the parameter another path)")
    backend = params.get("judge_backend") or ("replay" if params.get("judge_replay") else "rules")
    if backend == "replay" and not params.get("judge_replay"):
        return Skip("the replay judge backend needs judge_replay")
    from acceptgate.judge.run import Inputs

    inputs = Inputs(records=params["judge_records"], cards=params["judge_cards"], memory=params["judge_memory"],
                    replay=params.get("judge_replay"), human_labels=params.get("judge_human_labels"))
    return {"inputs": inputs, "backend": backend, "embedder": params.get("judge_embedder") or "minilm"}


def _judge_stats_arguments(params: dict[str, Any]) -> dict[str, Any] | Skip:
    """Statistics over tonight's judge run (E- vs E+ per configuration, agreement with the human labels)."""
    if not params.get("judge_run"):
        return Skip("no judge run tonight (the judge stage did not run): nothing to compare")
    return {"judge_run": params["judge_run"], "gate_run": None}


def _backfill_arguments(params: dict[str, Any]) -> dict[str, Any] | Skip:
    if params.get("run_ids") == []:  # the request selected nothing: scanning "all runs" would be wrong
        return Skip("the request selected no run")
    material = _hidden_material(params)
    if isinstance(material, Skip):
        return material
    # the leak backfill flow takes its dates as ISO text
    dates = {k: params[k].isoformat() for k in ("since", "until") if params.get(k) is not None}
    return {**material, **dates}


# The nightly chain, in order. ``produces`` hands a stage's run id to the stages after it. Certify comes
# before the gates (seed 002: six gates first, then the agent): a gate delivers only on tasks certified.
NIGHTLY_STAGES: tuple[Stage, ...] = (
    Stage("audit", "import -> suites -> gauge -> execute (references, wrong samples)"),
    Stage("certify", "V4V: certify each task (its pool with GT), then measure V and the other verifiers on it",
          _certify_arguments),
    Stage("gates", "CONFORM / H-MIX / OFF on the replayed or live source, certified tasks only", _gate_arguments,
          produces="gate_run"),
    Stage("leak-audit", "leak audit of the experiment records", _hidden_material),
    Stage("stats", "paired statistics over tonight's gate run", _stats_arguments),
    Stage("judge", "over-defence judge of the trajectory records", _judge_arguments,
          produces="judge_run"),
    Stage("judge-stats", "statistics over tonight's judge run", _judge_stats_arguments),
)


def run_id_of(result: Any) -> str | None:
    """The run id a stage's flow returned (a summary with ``run``, or a run with ``run_id``)."""
    run = getattr(result, "run", result)
    return getattr(run, "run_id", None)

# What a backfill request runs over the selected history.
BACKFILL_STAGES: tuple[Stage, ...] = (
    Stage("leak-backfill", "leak audit of the selected historical runs",
          _backfill_arguments),
)


@dataclass
class StageOutcome:
    name: str
    status: str  # ok | skipped | failed
    detail: str = ""


@dataclass
class ChainSummary:
    flow: str
    stages: list[StageOutcome] = field(default_factory=list)
    snapshot: str | None = None
    selected_runs: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        skipped = [s.name for s in self.stages if s.status == "skipped"]
        ran = f"{len(self.stages) - len(skipped)} of {len(self.stages)} stages ran" + (
            f", SKIPPED: {', '.join(skipped)}" if skipped else "")
        out = [f"{self.flow}: " + ", ".join(f"{s.name} {s.status}" for s in self.stages) + f" ({ran})"]
        out += [f"  {s.name}: {s.detail}" for s in self.stages if s.detail]
        if self.selected_runs:
            out.append(f"  runs selected: {', '.join(self.selected_runs)}")
        if self.snapshot:
            out.append(f"  snapshot {self.snapshot}")
        return out


def import_suites(humanevalplus: str, warehouse_path: str | Path, backend: str, limit: int | None) -> str:
    """The suites directory of a HumanEval+ file, beside the warehouse (``suites/humanevalplus-<sha>-<n>``):
    imported once (through the import pipeline and its cache), reused while the file is unchanged. The
    nightly chain runs gates, leak audit and certify on it (certify needs a suites directory)."""
    from acceptgate.datasets import importcache, suitefiles
    from acceptgate.scoring import ingest
    from acceptgate._util.hashing import sha256_file
    from acceptgate.sandbox import backend as backends

    digest = sha256_file(Path(humanevalplus))
    out = Path(warehouse_path).resolve().parent / "suites" / f"humanevalplus-{digest[:12]}-{limit or 'all'}"
    if (out / suitefiles.MANIFEST).is_file():
        try:
            if suitefiles.read_suites(out).source_sha256 == digest:
                return str(out)
        except InvalidInput:
            pass  # damaged: imported again below
    out.parent.mkdir(parents=True, exist_ok=True)
    with backends.create(backend) as sandbox:
        ingest.import_dataset("humanevalplus", humanevalplus, sandbox, out=out, limit=limit,
                              cache_dir=importcache.flow_cache_dir())
    return str(out)


# -- backfill ----------------------------------------------------------------------------------------

class BackfillRequest(BaseModel):
    """Which history to backfill: explicit run ids and/or a date range (UTC days, inclusive), optionally
    restricted to gate arms. At least one of run_ids, since, until must be given."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_ids: list[str] = []
    since: dt.date | None = None
    until: dt.date | None = None
    arms: list[str] = []

    @field_validator("arms")
    @classmethod
    def _known_arms(cls, arms: list[str]) -> list[str]:
        from acceptgate.gates import ARMS

        bad = [a for a in arms if a not in ARMS]
        if bad:
            raise ValueError(f"unknown arm(s) {bad}; valid arms: {', '.join(ARMS)}")
        return arms

    @field_validator("run_ids")
    @classmethod
    def _run_ids(cls, run_ids: list[str]) -> list[str]:
        from acceptgate._util.runids import RUN_ID

        bad = [r for r in run_ids if not RUN_ID.match(r)]
        if bad:
            raise ValueError(f"invalid run id(s) {bad}")
        return run_ids

    @model_validator(mode="after")
    def _some_selection(self) -> "BackfillRequest":
        if not self.run_ids and self.since is None and self.until is None:
            raise ValueError("give run_ids, or a date range (since/until), or both")
        if self.since and self.until and self.since > self.until:
            raise ValueError(f"since {self.since} is after until {self.until}")
        return self


def backfill_request(**values: Any) -> BackfillRequest:
    from pydantic import ValidationError

    try:
        return BackfillRequest(**values)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InvalidInput(err["msg"], record="backfill request",
                           field=".".join(str(p) for p in err["loc"]) or None) from None


_SELECT_RUNS = """
with audit_runs as (
    select run_id, 'audit' as kind, started_at, cast(null as varchar) as arms from runs
), gate as (
    select run_id, 'gate' as kind, started_at, arms from gate_runs
), final as (
    select * from audit_runs union all select * from gate
)
select run_id, kind, started_at, arms from final order by started_at, run_id
"""


@dataclass(frozen=True)
class SelectedRun:
    run_id: str
    kind: str  # audit | gate
    started_at: dt.datetime
    arms: tuple[str, ...]


def select_runs(path: str | Path, request: BackfillRequest) -> list[SelectedRun]:
    """The runs in the warehouse that match the request (all given run ids must exist)."""
    with warehouse.connect(path, read_only=True) as con:
        rows = con.execute(_SELECT_RUNS).fetchall()
    found = {r[0] for r in rows}
    missing = [r for r in request.run_ids if r not in found]
    if missing:
        raise InvalidInput(f"no such run in {path}: {', '.join(missing)}", record="backfill request", field="run_ids")
    out = []
    for run_id, kind, started_at, arms in rows:
        arm_list = tuple(a for a in (arms or "").split(",") if a)
        if request.run_ids and run_id not in request.run_ids:
            continue
        day = started_at.astimezone(dt.timezone.utc).date()
        if (request.since and day < request.since) or (request.until and day > request.until):
            continue
        if request.arms and not set(arm_list) & set(request.arms):  # audit runs have no arms
            continue
        out.append(SelectedRun(run_id, kind, started_at, arm_list))
    return out
