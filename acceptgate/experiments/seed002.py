"""Seed 002's certification table on this project's data: V, GT, the three trivial baselines and any
external verifier, each with TPR / TNR / BA_norm / FPR on attacks, gates passed and diagnosis, and the
share of false rejections that come from all-reject verifier-task pairs (seed: 87.9-96.0 %)."""

from __future__ import annotations

from acceptgate.experiments.result import ExperimentResult, Row
from acceptgate.v4v import certify as C
from acceptgate.v4v import metrics


def rows_from(cert: C.Certification) -> list[Row]:
    out = []
    for rep in cert.reports:
        s = rep.summary
        seed = "TPR 0, TNR 100, BA_norm 0 (all-reject)" if rep.name == "always-reject" else None
        text = (f"TPR {_f(s.tpr)}, TNR {_f(s.tnr)}, BA_norm {_f(s.ba_norm)}, FPR_attack {_f(s.fpr_attack)}; "
                f"gates {rep.gates_passed}/{rep.gates_applicable}; diagnosis {s.diagnosis}")
        out.append(Row(f"verifier/{rep.name}", f"{rep.name} ({rep.family})", seed,
                       None if s.ba_norm is None else s.ba_norm / 100, text, "pp", None, s.tasks,
                       {"tpr": s.tpr, "tnr": s.tnr, "ba_norm": s.ba_norm, "fpr_attack": s.fpr_attack,
                        "diagnosis": s.diagnosis, "failed_gates": rep.failed_gates, "median_round": s.round,
                        "copied_decisions": s.copied, "false_rejections": s.false_rejections,
                        "all_reject_false_rejections": s.all_reject_false_rejections}))
    for key, label, reports in (
            ("all_reject_share", "share of false rejections from all-reject verifier-task pairs, every verifier",
             cert.reports),
            ("all_reject_share/no_baselines", "the same, baselines left out (as acceptgate certify prints it)",
             [r for r in cert.reports if r.family != "baseline"])):
        part, whole, share = metrics.all_reject_share(r.summary for r in reports)
        out.append(Row(key, label, "87.9% – 96.0%", share, "n/a (no false rejection)" if share is None else
                       f"{100 * share:.1f}% ({part}/{whole})", "share", part, whole,
                       {"verifiers": [r.name for r in reports]}))
    return out


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def run(suites: str, dataset: str, backend, settings: C.Settings, *, samples: str | None = None,
        limit: int | None = None, progress=None) -> ExperimentResult:
    materials = C.load_materials(suites, dataset, samples, limit=limit)
    cert = C.certify(materials, backend, settings, progress)
    res = ExperimentResult("seed002", suites, {"dataset": dataset, "samples": samples, "limit": limit,
                                               **settings.key()})
    res.inputs = [C.inputs_sha256(materials), C.pool_sha256(cert.kept)]
    res.rows = rows_from(cert)
    res.notes.append(f"{len(materials)} tasks; pools: {C.pool_counts(cert.kept, cert.findings)}")
    res.notes.append("the seed's share pools the agent-written verifiers of its archive; here the first row pools "
                     "every verifier above, baselines included, the second only V, GT and external ones")
    return res
