"""Seed 002's table on this project's data: how many tasks their source verifier GT certifies (six gates
on construction labels), then V, the three trivial baselines and any external verifier measured on the
certified tasks (TPR / TNR / BA_norm / FPR_h, held-out BA_norm, diagnosis), and the share of false
rejections that come from all-reject verifier-task pairs (seed: 87.9-96.0 %).

Which rows measure: the certification count, V's and external verifiers' rows, and the all-reject share
over the *measured* verifiers (baselines and the source left out). The baselines' rows and the share
that pools them are demonstrations: always-reject's TPR 0 / TNR 100 / BA_norm 0 and its own false
rejections are its definition, true on any pool.
"""

from __future__ import annotations

from acceptgate.pipelines.experiments.result import ExperimentResult, Row
from acceptgate.v4v import certify as C
from acceptgate.v4v import metrics


def rows_from(cert: C.Certification) -> list[Row]:
    ok = sum(c.certified for c in cert.certificates)
    found = {f: sum(x.finding == f for x in cert.findings) for f in sorted({x.finding for x in cert.findings})}
    out = [Row("tasks_certified", "tasks certified by GT (six gates on construction labels)",
               "222 of 267 (the authors' frozen set)", ok / len(cert.certificates) if cert.certificates else None,
               f"{ok} of {len(cert.certificates)}", "share", ok, len(cert.certificates),
               {"failed": {c.task_id: c.reason for c in cert.certificates if not c.certified}, "findings": found})]
    for rep in cert.reports:
        s = rep.summary
        seed = "TPR 0, TNR 100, BA_norm 0 (all-reject)" if rep.name == "always-reject" else None
        text = (f"TPR {_f(s.tpr)}, TNR {_f(s.tnr)}, BA_norm {_f(s.ba_norm)}, FPR_attack {_f(s.fpr_attack)}; "
                f"gates {rep.gates_passed}/{rep.gates_applicable}; diagnosis {s.diagnosis}")
        text += f"; held-out BA_norm {_f(s.heldout_ba_norm)}"
        role = ", the source: certifies the tasks" if rep.role == C.SOURCE_ROLE else ""
        out.append(Row(f"verifier/{rep.name}", f"{rep.name} ({rep.family}{role})", seed,
                       None if s.ba_norm is None else s.ba_norm / 100, text, "pp", None, s.tasks,
                       {"tpr": s.tpr, "tnr": s.tnr, "ba_norm": s.ba_norm, "fpr_attack": s.fpr_attack,
                        "heldout_ba_norm": s.heldout_ba_norm, "diagnosis": s.diagnosis,
                        "failed_gates": rep.failed_gates, "median_round": s.round, "copied_decisions": s.copied,
                        "false_rejections": s.false_rejections,
                        "all_reject_false_rejections": s.all_reject_false_rejections},
                       basis="demonstration" if rep.family == "baseline" else "measured"))
    for key, label, reports, basis in (
            ("all_reject_share", "share of false rejections from all-reject verifier-task pairs, every verifier "
             "(the always-reject baseline's own rejections)", cert.reports, "demonstration"),
            ("all_reject_share/no_baselines", "the same over the measured verifiers (baselines and the source left "
             "out, as acceptgate certify prints it)",
             [r for r in cert.reports if r.family != "baseline" and r.role != C.SOURCE_ROLE], "measured")):
        part, whole, share = metrics.all_reject_share(r.summary for r in reports)
        out.append(Row(key, label, "87.9% – 96.0%", share, "n/a (no false rejection)" if share is None else
                       f"{100 * share:.1f}% ({part}/{whole})", "share", part, whole,
                       {"verifiers": [r.name for r in reports]}, basis=basis))
    return out


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def run(suites: str, dataset: str, backend, settings: C.Settings, *, samples: str | None = None,
        limit: int | None = None, progress=None) -> ExperimentResult:
    import dataclasses

    from acceptgate.v4v import heldout

    materials = C.load_materials(suites, dataset, samples, limit=limit)
    settings = dataclasses.replace(settings, heldout_seed=settings.heldout_seed or heldout.new_seed())
    cert = C.certify(materials, backend, settings, progress)
    res = ExperimentResult("seed002", suites, {"dataset": dataset, "samples": samples, "limit": limit,
                                               **settings.key()})
    res.inputs = [C.inputs_sha256(materials), C.pool_sha256(cert.kept)]
    res.rows = rows_from(cert)
    res.notes.append(f"{len(materials)} tasks; pools: {C.pool_counts(cert.kept, cert.findings)}")
    res.notes.append("the seed's share pools the agent-written verifiers of its archive; here the measured row pools "
                     "V and any external verifier (the verifiers under study); the row pooling the baselines is a "
                     "demonstration (always-reject's own rejections)")
    res.notes.append(f"held-out seed of this run (published after it): {settings.heldout_seed}")
    return res
