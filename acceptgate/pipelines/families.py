"""Every run family, declared once: the kind (the flow recorded with each attempt in run_attempts), the
run table (``run_id`` primary key; None for the leak audit), the stages in order and the tables each
stage writes. The run ledger (``ledger.Family``) takes one of these for every start, stage, end and
publish, and refuses a stage's frames that are not exactly that stage's tables.

The domain packages compute frames keyed by these table names; which tables a family owns is said
here and nowhere else (tests/test_families.py checks it).
"""

from __future__ import annotations

from acceptgate.leak.store import STAGE as LEAK_STAGE
from acceptgate.pipelines.ledger import Family

AUDIT = Family("audit", "runs", {
    "import": ("tasks", "candidates", "import_issues"),
    "suites": ("suites", "cases"),
    "gauge": ("gauge_checks",),
    "execute": ("executions", "case_results"),
})
GATE = Family("gate", "gate_runs", {
    "gate": ("gate_decisions", "gate_attempts", "gate_messages", "gate_exclusions"),
    "deliveries": ("deliveries",),
})
# The service records each decision as a complete gate run: the gate's tables, by design, under its own kind
SERVE_API = Family("serve-api", GATE.table, GATE.stages)
CERTIFY = Family("certify", "v4v_runs", {
    "pools": ("v4v_candidates", "v4v_findings", "v4v_executions"),
    "certification": ("v4v_decisions", "v4v_mutants", "v4v_gates", "v4v_task_metrics", "v4v_verifier_summary",
                      "v4v_task_certificates", "v4v_heldout"),
})
STATS = Family("stats", "stats_runs", {
    "stats": ("stats_effects", "stats_stability", "stats_agreement", "stats_judge_comparison",
              "stats_condition_rates", "stats_overall_interaction"),
})
JUDGE = Family("judge", "judge_runs", {
    "judge": ("judge_verdicts", "judge_retrievals", "judge_observations", "judge_input_issues", "judge_human_labels"),
})
EXPERIMENT = Family("experiment", "experiment_runs", {"experiment": ("experiment_rows",)})
SCORE = Family("score", "score_runs", {"score": ("score_results",)})
# The leak audit and its backfill write the leak rows of the runs they scan (keyed by those runs' ids, in
# the order a batch is inserted): a new attempt clears nothing of them, and the audit has no row of its own.
_LEAK_STAGES = {LEAK_STAGE: ("leak_scans", "leak_verdicts", "leak_hit_rules", "leak_hits")}
LEAK_AUDIT = Family("leak-audit", None, _LEAK_STAGES, clears=False)
LEAK_BACKFILL = Family("leak-backfill", None, _LEAK_STAGES, clears=False)

FAMILIES = (AUDIT, GATE, SERVE_API, CERTIFY, STATS, JUDGE, EXPERIMENT, SCORE, LEAK_AUDIT, LEAK_BACKFILL)


def of_kind(kind: str) -> Family:
    """The family whose runs are recorded under ``kind`` (ValueError for an unknown kind)."""
    for family in FAMILIES:
        if family.kind == kind:
            return family
    raise ValueError(f"no run family {kind!r} (kinds: {', '.join(f.kind for f in FAMILIES)})")
