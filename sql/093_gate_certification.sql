-- 093_gate_certification: a gate delivers only on certified tasks (v4v_task_certificates for the task's
-- exact suites and pool), unless `gate --no-certify`; the certification each decision relied on and
-- the V it gated with, as measured there (FPR on the attacks, seed 002's FPR_h), are stored with every
-- decision, so every false-delivery rate is read beside the FPR_h of the V that gated it. Tasks left
-- out before any gate (a failed certification, a failed gauge) are listed with their reason.

alter table gate_runs add column certify varchar default 'skipped';   -- checked | skipped (--no-certify; runs before 093)
alter table gate_runs add column max_fpr_attack double;               -- the policy's limit on V's FPR_h (%); null: none
alter table gate_decisions add column certification varchar;          -- the certify run id relied on, or 'skipped'
alter table gate_decisions add column v_fpr_h double;                 -- V's measured FPR on the attacks of this task (%)

create table gate_exclusions (
    run_id              varchar not null,
    task_id             varchar not null,
    stage               varchar not null,      -- certification (the task failed it) | gauge (a suite failed it)
    reason              varchar not null,
    primary key (run_id, task_id)
);
