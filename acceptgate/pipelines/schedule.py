"""What the scheduled service runs: the nightly chain of stages and the backfill request.

Prefect-free (the flows in ``flows/nightly.py`` and ``flows/history_backfill.py`` sequence these).

The nightly chain is a declared list of stages by name. Which flow implements a stage is known only
to the flows layer (``flows/stage_flows.py``): the core never names nor imports a flow. A stage whose
flow is not installed is skipped there by an explicit check that is logged and recorded in the summary
-- never by catching an ImportError raised from inside a flow. A stage's flow takes one typed request
(``acceptgate.pipelines.requests``), which its Stage builds from the chain's request, so a stage added
later needs its line here and its flow's line there.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel

from acceptgate.store import warehouse
from acceptgate._util.errors import InvalidInput
from acceptgate.pipelines.requests import (DEFAULT_ARMS, AuditRequest, BackfillPerRun, CertifyRequest, GateRequest,
                                           HistoryBackfillRequest, JudgeRequest, LeakAuditRequest,
                                           LeakBackfillRequest, NightlyRequest, StatsRequest)

NIGHTLY_CRON = "30 2 * * *"  # UTC


@dataclass(frozen=True)
class Skip:
    """A stage not run, and why (shown in the run's log and summary)."""

    reason: str


@dataclass(frozen=True)
class Stage:
    name: str
    what: str
    kind: type[BaseModel]  # the request its flow takes (``flows/stage_flows.py``: the flow)
    # the stage's request from the chain's request and what earlier stages produced; Skip when the
    # chain's request does not ask for this stage
    request: Callable[[Any, dict[str, Any]], BaseModel | Skip]
    # the name later stages read this stage's run id under (e.g. stats reads tonight's gate run)
    produces: str | None = None


def _codet_path(source: str | None) -> str | None:
    """The samples file of a replayed source (codet:PATH), which certify also uses as real samples."""
    if source and source.startswith("codet:"):
        return source.split(":", 1)[1]
    return None


def missing_files(n: NightlyRequest) -> Skip | None:
    """A stage whose input file does not exist is skipped, naming the file (deployment defaults name
    files under data/ that a machine may not have yet)."""
    paths = [n.gate_humanevalplus, n.certify_dataset, n.certify_samples, _codet_path(n.gate_source), n.gate_suites]
    gone = [p for p in paths if p and not Path(p).exists()]
    if gone:
        return Skip(f"{gone[0]} not found (put the file there, or give the parameter another path)")
    return None


def chat_config(n: NightlyRequest) -> dict[str, str] | None:
    """The live model of an ``openai`` gate source: ``gate_base_url`` and ``gate_model`` (the key is read
    from the environment variable ``gate_api_key_env``, never a parameter: parameters are stored in
    Prefect). None for a replayed source (the request refuses an openai source without its model)."""
    if not (n.gate_source or "").startswith("openai"):
        return None
    return {"base_url": n.gate_base_url, "model": n.gate_model, "api_key_env": n.gate_api_key_env}


def _common(n: NightlyRequest, *names: str) -> dict[str, Any]:
    """The chain's fields a stage takes as they are (the warehouse, the backend, ...), when set."""
    return {k: getattr(n, k) for k in ("warehouse", "backend", *names) if getattr(n, k) is not None}


SHARDED = ("limit", "dask", "shard_size")  # what the chain gives the stages that run in shards


def _audit_request(n: NightlyRequest, produced: dict[str, Any]) -> AuditRequest:
    return AuditRequest(**_common(n, *SHARDED))


def _gate_request(n: NightlyRequest, produced: dict[str, Any]) -> GateRequest | Skip:
    if not n.gate_source:
        return Skip("no gate_source parameter (codet:PATH, evalplus:PATH or openai with gate_base_url and "
                    "gate_model): nothing to gate")
    if not (n.gate_suites or n.gate_humanevalplus):
        return Skip("no gate_suites or gate_humanevalplus parameter: no tasks to gate")
    if missing_files(n):
        return missing_files(n)
    # the suites directory when there is one (the chain imports gate_humanevalplus into it once)
    policy = {} if n.max_fpr_attack is None else {"max_fpr_attack": n.max_fpr_attack}
    return GateRequest(**_common(n, *SHARDED), source=n.gate_source, suites_dir=n.gate_suites,
                       humanevalplus=None if n.gate_suites else n.gate_humanevalplus,
                       arms=list(n.arms or DEFAULT_ARMS), profile=n.profile, chat_config=chat_config(n),
                       # tonight's certify stage ran before this one: every task needs its certification record
                       certify=not n.no_certify, **policy)


def _certify_request(n: NightlyRequest, produced: dict[str, Any]) -> CertifyRequest | Skip:
    """The HumanEval+ suites the gates use, their jsonl (the gold programs: certify_dataset, by default
    the gate_humanevalplus file) and real samples (certify_samples, by default the codet gate source)."""
    dataset = n.certify_dataset or n.gate_humanevalplus
    if missing_files(n):
        return missing_files(n)
    if not (n.gate_suites and dataset):
        return Skip("no HumanEval+ tasks (gate_humanevalplus, or gate_suites with certify_dataset): "
                    "nothing to certify against")
    return CertifyRequest(**_common(n, *SHARDED), suites_dir=n.gate_suites, dataset=dataset,
                          samples=n.certify_samples or _codet_path(n.gate_source))


def _hidden_material(n: NightlyRequest | HistoryBackfillRequest) -> dict[str, Any] | Skip:
    """The leak audits read the hidden suites from the tasks the gates used."""
    if not (n.gate_suites or n.gate_humanevalplus):
        return Skip("no gate_suites or gate_humanevalplus parameter: no hidden suites to scan for")
    gone = [p for p in (n.gate_suites, n.gate_humanevalplus) if p and not Path(p).exists()]
    if gone:
        return Skip(f"{gone[0]} not found (put the file there, or give the parameter another path)")
    suites = n.gate_suites  # imported once by the chain when only the HumanEval+ file is given
    return {"suites_dir": suites, "humanevalplus": None if suites else n.gate_humanevalplus}


def _leak_request(n: NightlyRequest, produced: dict[str, Any]) -> LeakAuditRequest | Skip:
    material = _hidden_material(n)
    if isinstance(material, Skip):
        return material
    return missing_files(n) or LeakAuditRequest(**_common(n, "arms"), **material)


def _stats_request(n: NightlyRequest, produced: dict[str, Any]) -> StatsRequest | Skip:
    """Statistics over tonight's gate run (each arm against OFF)."""
    if not produced.get("gate_run"):
        return Skip("no gate run tonight (the gates stage did not run): nothing new to compare")
    if "off" not in (n.arms or DEFAULT_ARMS):
        return Skip("tonight's gate run has no OFF arm to compare the arms with")
    return StatsRequest(warehouse=n.warehouse, gate_run=produced["gate_run"], arms=n.arms)


JUDGE_FILES = ("judge_records", "judge_cards", "judge_memory", "judge_replay", "judge_human_labels")


def _judge_request(n: NightlyRequest, produced: dict[str, Any]) -> JudgeRequest | Skip:
    """The over-defence judge on the trajectory records the parameters name (jsonl files)."""
    if not n.judge_records:
        return Skip("no judge_records parameter (with judge_cards and judge_memory): nothing to judge")
    if not (n.judge_cards and n.judge_memory):
        return Skip("judge_records needs judge_cards and judge_memory too")
    gone = [getattr(n, k) for k in JUDGE_FILES if getattr(n, k) and not Path(getattr(n, k)).exists()]
    if gone:
        return Skip(f"{gone[0]} not found (put the file there, or give the parameter another path)")
    backend = n.judge_backend or ("replay" if n.judge_replay else "rules")
    if backend == "replay" and not n.judge_replay:
        return Skip("the replay judge backend needs judge_replay")
    return JudgeRequest(warehouse=n.warehouse, records=n.judge_records, cards=n.judge_cards, memory=n.judge_memory,
                        replay=n.judge_replay, human_labels=n.judge_human_labels, backend=backend,
                        embedder=n.judge_embedder)


def _judge_stats_request(n: NightlyRequest, produced: dict[str, Any]) -> StatsRequest | Skip:
    """Statistics over tonight's judge run (E- vs E+ per configuration, agreement with the human labels)."""
    if not produced.get("judge_run"):
        return Skip("no judge run tonight (the judge stage did not run): nothing to compare")
    return StatsRequest(warehouse=n.warehouse, judge_run=produced["judge_run"])


def _backfill_request(h: HistoryBackfillRequest, produced: dict[str, Any]) -> LeakBackfillRequest | Skip:
    """The leak audit's backfill over the runs the request selected (``produced["selected_runs"]``)."""
    if not produced.get("selected_runs"):  # the request selected nothing: scanning "all runs" would be wrong
        return Skip("the request selected no run")
    material = _hidden_material(h)
    if isinstance(material, Skip):
        return material
    # the leak backfill takes its dates as ISO text
    return LeakBackfillRequest(warehouse=h.warehouse, backend=h.backend, run_ids=produced["selected_runs"],
                               since=h.since, until=h.until, arms=h.arms or None, **material)


# The nightly chain, in order. ``produces`` hands a stage's run id to the stages after it. Certify comes
# before the gates (seed 002: six gates first, then the agent): a gate delivers only on tasks certified.
NIGHTLY_STAGES: tuple[Stage, ...] = (
    Stage("audit", "import -> suites -> gauge -> execute (references, wrong samples)", AuditRequest,
          _audit_request),
    Stage("certify", "V4V: certify each task (its pool with GT), then measure V and the other verifiers on it",
          CertifyRequest, _certify_request),
    Stage("gates", "CONFORM / H-MIX / OFF on the replayed or live source, certified tasks only", GateRequest,
          _gate_request, produces="gate_run"),
    Stage("leak-audit", "leak audit of the experiment records", LeakAuditRequest, _leak_request),
    Stage("stats", "paired statistics over tonight's gate run", StatsRequest, _stats_request),
    Stage("judge", "over-defence judge of the trajectory records", JudgeRequest, _judge_request,
          produces="judge_run"),
    Stage("judge-stats", "statistics over tonight's judge run", StatsRequest, _judge_stats_request),
)


def run_id_of(result: Any) -> str | None:
    """The run id a stage's flow returned (a summary with ``run``, or a run with ``run_id``)."""
    run = getattr(result, "run", result)
    return getattr(run, "run_id", None)

# What a backfill request runs over the selected history.
BACKFILL_STAGES: tuple[Stage, ...] = (
    Stage("leak-backfill", "leak audit of the selected historical runs", LeakBackfillRequest, _backfill_request),
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


def select_runs(path: str | Path, request: BackfillPerRun) -> list[SelectedRun]:
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
