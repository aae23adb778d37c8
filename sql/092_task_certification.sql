-- 092_task_certification: seed 002's order, six gates first, then the verifiers. A certification run
-- certifies each *task* -- its candidate pool, labelled by construction only, with its source verifier
-- GT -- and then measures every other verifier (V, baselines, external programs) on the certified tasks.
-- GT's disagreements with a construction label are findings with witnesses (differential testing
-- against the reference), never relabels: v4v_findings replaces v4v_label_checks for runs from here on
-- (pipeline 'certify/2'). Part of every pool is held out: made fresh per run from a secret seed whose
-- sha256 the run row carries from its start and which v4v_heldout publishes at its end. Gates, the
-- nightly chain and the service require a task's certificate (v4v_task_certificates) for its exact
-- suites and pool before they deliver on it.

alter table v4v_runs add column heldout_seed_sha256 varchar;           -- committed before the run; null: no held-out part
alter table v4v_candidates add column part varchar default 'published'; -- published | held-out

-- One row per candidate whose construction label GT's decision contradicts, settled by a differential test.
create table v4v_findings (
    run_id              varchar not null,
    task_id             varchar not null,
    candidate_id        varchar not null,
    kind                varchar not null,
    recipe              varchar not null,
    part                varchar not null,      -- published | held-out
    label               varchar not null,      -- the construction label, unchanged: legal | illegal
    gt_decision         varchar not null,      -- PASS | FAIL | ERROR:<kind>
    finding             varchar not null,      -- construction-wrong | gt-weak | gt-wrong | gt-undecided | undecidable | undetermined
    action              varchar not null,      -- excluded (from the pool) | task-fails (the task is not certified)
    reason              varchar not null,
    witness             varchar not null,      -- JSON: input, origin (GT or random input), reference, candidate; null when none
    inputs_tried        integer not null,      -- inputs inside the task's domain the candidate was compared on
    primary key (run_id, candidate_id)
);

-- One row per task: its certificate, bound to its suites and to the pool its reference builds.
create table v4v_task_certificates (
    run_id              varchar not null,
    task_id             varchar not null,
    certified           boolean not null,      -- GT passed all six gates on the construction labels
    failed_gates        varchar not null,      -- JSON list of GT's failed gates
    reason              varchar not null,
    visible_spec_hash   varchar,               -- null: the task has no visible suite
    hidden_spec_hash    varchar not null,
    reference_sha256    varchar not null,
    pool_key            varchar not null,      -- sha256 of the pool version, statement, reference and spec hashes
    pool_sha256         varchar not null,      -- the labelled candidates certified (ids, hashes, labels, parts)
    candidates          integer not null,      -- labelled candidates after exclusions
    held_out            integer not null,      -- of them, held out
    findings            integer not null,
    excluded            integer not null,      -- candidates excluded by a finding (construction-wrong, undecidable)
    v_tpr               double,                -- V measured on this task (round 0); null: V not measured here
    v_tnr               double,
    v_ba_norm           double,
    v_fpr_h             double,                -- V's FPR on the attacks (seed 002's FPR_h)
    primary key (run_id, task_id)
);

-- The held-out part's seed, published once the run is over (with it anyone rebuilds the held-out candidates).
create table v4v_heldout (
    run_id              varchar primary key,
    heldout_seed        varchar not null,
    heldout_seed_sha256 varchar not null,      -- equals v4v_runs.heldout_seed_sha256, committed at the start
    candidates          integer not null
);

alter table v4v_task_metrics add column heldout_legal integer;
alter table v4v_task_metrics add column heldout_illegal integer;
alter table v4v_task_metrics add column heldout_legal_accepted integer;
alter table v4v_task_metrics add column heldout_illegal_rejected integer;
alter table v4v_task_metrics add column samples integer;           -- model samples (unlabelled) decided
alter table v4v_task_metrics add column samples_accepted integer;
alter table v4v_verifier_summary add column role varchar;          -- source (certifies tasks) | measured
alter table v4v_verifier_summary add column heldout_tpr double;
alter table v4v_verifier_summary add column heldout_tnr double;
alter table v4v_verifier_summary add column heldout_ba_norm double;
alter table v4v_verifier_summary add column samples integer;
alter table v4v_verifier_summary add column samples_accepted integer;
