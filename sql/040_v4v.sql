-- 040_v4v: V4V certification of verifiers (issue 11). One certification run = one suites directory,
-- one gold file, optional model samples, a list of verifiers and the settings (k, repeat sample).
-- Stage 'pools' writes v4v_candidates, v4v_label_checks and v4v_executions; stage 'certification'
-- writes v4v_decisions, v4v_mutants, v4v_gates, v4v_task_metrics and v4v_verifier_summary. Each
-- stage replaces its rows for its run id in one transaction. Allowed values are declared in
-- expectations/<table>.json.

create table v4v_runs (
    run_id              varchar primary key,
    run_id_origin       varchar not null,      -- 'derived' (inputs' and settings' hashes) | 'user'
    pipeline            varchar not null,      -- 'certify/1'
    acceptgate_version  varchar not null,
    suites_from         varchar not null,      -- the suites directory
    dataset_from        varchar not null,      -- the HumanEval+ file the gold programs came from
    samples_from        varchar,               -- the model samples file (null: no different-impl candidates)
    inputs_sha256       varchar not null,      -- over every task's gold, spec hashes and sample origins
    settings            varchar not null,      -- JSON: verifiers, k, repeat_sample, pool sizes
    task_count          integer not null,
    verifiers           varchar not null,      -- comma-separated, in table order
    k                   integer not null,      -- runs from reset per re-run candidate (>= 3 to pass)
    backend             varchar not null,
    status              varchar not null,      -- running | ok | failed | interrupted
    started_at          timestamptz not null,
    finished_at         timestamptz,
    wall_seconds        double
);

-- stage pools ----------------------------------------------------------------------------------------

-- One row per candidate kept in a task's pool (after the oracle check), labelled by construction.
create table v4v_candidates (
    run_id              varchar not null,
    task_id             varchar not null,
    candidate_id        varchar not null,      -- <task>:<kind>:<recipe>, the same on every run and machine
    kind                varchar not null,      -- gold | surface | different-impl | no-op | near-miss | regression | model-wrong | attack
    class               varchar not null,      -- gold | legal-variant | ordinary-wrong | attack
    recipe              varchar not null,      -- how it was made: rename, comparison@3, stateful, the sample index...
    label               varchar not null,      -- legal | illegal
    origin              varchar not null,      -- construction | codet:<index>
    candidate_sha256    varchar not null,
    source              varchar not null,      -- the program text
    primary key (run_id, candidate_id)
);

-- One row per proposed candidate: did the strongest oracle (GT) confirm its label?
create table v4v_label_checks (
    run_id              varchar not null,
    task_id             varchar not null,
    candidate_id        varchar not null,      -- the proposed id (before any relabelling)
    kind                varchar not null,
    recipe              varchar not null,
    intended_label      varchar not null,
    oracle_decision     varchar not null,      -- PASS | FAIL | ERROR:<kind>
    action              varchar not null,      -- kept | relabelled | dropped
    reason              varchar not null,
    final_kind          varchar,               -- null when dropped
    final_label         varchar,
    final_candidate_id  varchar,               -- the id it is kept under in v4v_candidates (null when dropped)
    primary key (run_id, candidate_id)
);

-- One row per (candidate text, suite, round): one sandboxed process, every case's output kept.
create table v4v_executions (
    run_id              varchar not null,
    task_id             varchar not null,
    candidate_sha256    varchar not null,
    suite               varchar not null,      -- visible | hidden
    round               integer not null,      -- 0 = the run every verifier decides from; 1.. = re-runs from reset
    spec_hash           varchar not null,
    render_hash         varchar not null,
    cases_total         integer not null,
    cases_answered      integer not null,
    cases_failing       integer not null,      -- under the suite's own comparison
    load_error          varchar,
    broken              varchar,               -- timeout|crash|memory|protocol: detail, when the run ended early
    outputs_json        varchar,               -- round 0: per case [status, got canonical or exception type]
    outputs_sha256      varchar not null,
    wall_seconds        double not null,
    primary key (run_id, task_id, candidate_sha256, suite, round)
);

-- stage certification --------------------------------------------------------------------------------

-- One row per decision: verifier x candidate x round, with everything it is bound to.
create table v4v_decisions (
    run_id              varchar not null,
    task_id             varchar not null,
    verifier            varchar not null,
    candidate_id        varchar not null,
    round               integer not null,
    decision            varchar not null,      -- PASS | FAIL | ERROR
    error_kind          varchar,               -- crash | timeout | malformed (ERROR only)
    reason              varchar not null,
    by_exception        boolean not null,      -- a FAIL reached because the candidate raised
    candidate_sha256    varchar,
    verifier_version    varchar,
    spec_hash           varchar,
    render_hash         varchar,
    primary key (run_id, verifier, candidate_id, round)
);

-- One row per verifier mutant (suite verifiers): detected = some candidate's valid decision changed.
create table v4v_mutants (
    run_id              varchar not null,
    task_id             varchar not null,
    verifier            varchar not null,
    mutant_id           varchar not null,      -- drop:<case> | perturb:<case>:<hash> | weaken:<how>
    operator            varchar not null,      -- drop-case | perturb-expected | weaken-comparison
    detected            boolean not null,
    witness             varchar,               -- a candidate id whose decision changed
    primary key (run_id, task_id, verifier, mutant_id)
);

-- One row per (task, verifier, gate), with its receipt.
create table v4v_gates (
    run_id              varchar not null,
    task_id             varchar not null,
    verifier            varchar not null,
    gate                varchar not null,      -- replay | repeatability | provenance | input-label-consistency | trivial-baselines | mutation
    status              varchar not null,      -- pass | fail | n/a
    reason              varchar not null,
    receipt             varchar not null,      -- JSON: inputs, hashes, decisions, witnesses
    receipt_sha256      varchar not null,
    primary key (run_id, task_id, verifier, gate)
);

-- One row per (task, verifier, round): the counts behind TPR and TNR.
create table v4v_task_metrics (
    run_id              varchar not null,
    task_id             varchar not null,
    verifier            varchar not null,
    round               integer not null,
    legal               integer not null,
    illegal             integer not null,
    attacks             integer not null,
    legal_accepted      integer not null,
    illegal_rejected    integer not null,      -- valid FAILs only: an ERROR is no rejection
    attacks_accepted    integer not null,
    tpr                 double,                -- null when the pool has no legal candidate
    tnr                 double,
    ba_norm             double,
    fpr_attack          double,
    errors_crash        integer not null,
    errors_timeout      integer not null,
    errors_malformed    integer not null,
    fails_by_exception  integer not null,
    all_reject          boolean not null,
    all_accept          boolean not null,
    gold_only           boolean,               -- null when the pool has no legal candidate unlike the gold
    primary key (run_id, task_id, verifier, round)
);

-- One row per verifier: the table `acceptgate certify` prints.
create table v4v_verifier_summary (
    run_id              varchar not null,
    verifier            varchar not null,
    family              varchar not null,      -- suite | baseline | external
    tasks               integer not null,
    gates_passed        integer not null,      -- gates passed on every task
    gates_applicable    integer not null,
    failed_gates        varchar not null,      -- JSON: gate -> tasks where it failed
    tpr                 double,                -- unweighted mean over tasks, from the median-BA round
    tnr                 double,
    ba_norm             double,                -- tpr + tnr - 100
    fpr_attack          double,
    mutation_score      double,                -- detected / all mutants (suite verifiers)
    median_round        integer not null,
    rounds              integer not null,
    round_ba            varchar not null,      -- JSON list: BA_norm of each round
    passes              integer not null,
    fails               integer not null,
    errors_crash        integer not null,
    errors_timeout      integer not null,
    errors_malformed    integer not null,
    fails_by_exception  integer not null,
    diagnosis           varchar not null,      -- all-reject | all-accept | gold-only (comma-separated) | -
    primary key (run_id, verifier)
);
