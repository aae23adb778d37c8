"""Which tasks a gate may decide on, before any gate runs: certified, gauged, and V strong enough.

1. **Certification** (unless ``--no-certify``): every task needs a certification record for its exact
   suites and pool (``pipelines.certify.require_tasks``; none is InvalidInput naming the task, exit 2
   before any work). A task whose record says it failed certification is excluded with the reason.
2. **Gauge** (unless ``--no-gauge``): each remaining task's suites are gauged (records reused); a task
   with a failing suite is excluded with the suite and the reasons, the other tasks go on.
3. **Policy**: a task whose V, measured on its certified pool, accepts more than ``max_fpr_attack`` %
   of the attacks is refused by every arm that decides with V (OFF delivers ungated, as always).

No task left is InvalidInput (exit 2): a run over nothing would report rates over no task.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from acceptgate._util.errors import InvalidInput
from acceptgate.pipelines import certify as certified

CERTIFICATION, GAUGE = "certification", "gauge"


@dataclass
class Admission:
    tasks: list  # the tasks to gate
    exclusions: list[tuple[str, str, str]] = field(default_factory=list)  # (task, stage, reason)
    certs: dict[str, certified.TaskCertification] = field(default_factory=dict)
    refusals: dict[str, str] = field(default_factory=dict)  # task -> why the gated arms refuse it

    def stamp(self, outcomes: list) -> list:
        """Each outcome with the certification its task relied on and V's FPR_h measured there."""
        for o in outcomes:
            cert = self.certs.get(o.task_id)
            if cert is not None:
                o.certification, o.v_fpr_h = cert.run_id, cert.v_fpr_h
        return outcomes


def admit(tasks: list, backend, *, warehouse: str | os.PathLike | None, certify: bool, gauge: bool,
          max_fpr_attack: float | None, recorded_gauge: dict | None = None, store: Path | None = None,
          progress=None) -> Admission:
    """The three checks above, in order (cheapest first)."""
    from acceptgate.scoring import gauge as gauges
    from acceptgate.store import warehouse as wh

    out = Admission(list(tasks))
    if certify:
        out.certs = certified.require_tasks(wh.resolve_path(warehouse), out.tasks)
        out.exclusions += [(t.task_id, CERTIFICATION, f"not certified (run {out.certs[t.task_id].run_id}): "
                            f"{out.certs[t.task_id].reason}") for t in out.tasks if not out.certs[t.task_id].certified]
    if gauge:
        remaining = [t for t in out.tasks if t.task_id not in {e[0] for e in out.exclusions}]
        check = gauges.assess(remaining, backend, recorded=recorded_gauge,
                              store=gauges.records_dir() if store is None else store, progress=progress)
        out.exclusions += [(tid, GAUGE, why) for tid, why in check.failed_tasks().items()]
    gone = {e[0] for e in out.exclusions}
    out.tasks = [t for t in out.tasks if t.task_id not in gone]
    if not out.tasks and tasks:
        tid, stage, why = out.exclusions[0]
        raise InvalidInput(f"no task left to gate: all {len(tasks)} were excluded, first by the {stage} check: "
                           f"task {tid}: {why}",
                           field="--no-certify" if stage == CERTIFICATION else "--no-gauge")
    for t in out.tasks:
        cert = out.certs.get(t.task_id)
        if cert is not None and max_fpr_attack is not None and cert.v_fpr_h is not None \
                and cert.v_fpr_h > max_fpr_attack:
            out.refusals[t.task_id] = (f"V too weak to gate: it accepts {cert.v_fpr_h:.1f}% of the attacks on this task's "
                                       f"certified pool (FPR_h, run {cert.run_id}), over --max-fpr-attack "
                                       f"{max_fpr_attack:g}%")
    return out
