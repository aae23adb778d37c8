-- 020_gates: acceptance gates (issue 4). One gate run = one source of candidates, one task set, one
-- or more arms (conform | hmix | off). Stage 'gate' writes gate_decisions, gate_attempts and
-- gate_messages; stage 'deliveries' writes deliveries (delivered programs scored on the hidden GT
-- suite, after every decision is final). Each stage replaces its rows for its run id in one
-- transaction, so a re-run of the same run id leaves the same rows. Allowed values are declared in
-- expectations/<table>.json.

-- One row per gate run; upserted at the start and on completion.
create table gate_runs (
    run_id              varchar primary key,
    run_id_origin       varchar not null,      -- 'derived' (from the inputs' hashes) | 'user' (--run-id)
    pipeline            varchar not null,      -- 'gate/1'
    acceptgate_version  varchar not null,
    source              varchar not null,      -- e.g. 'codet:/path/samples.jsonl.gz', 'openai:<model>'
    source_sha256       varchar,               -- sha256 of the samples file (null for a live model)
    tasks_from          varchar not null,      -- the HumanEval+ file or suites directory the tasks came from
    tasks_sha256        varchar not null,      -- sha256 over the tasks' visible and hidden spec hashes
    task_count          integer not null,
    arms                varchar not null,      -- comma-separated, in run order
    per_task            integer not null,      -- CONFORM draw cap (5)
    backend             varchar not null,
    status              varchar not null,      -- running | ok | failed | interrupted
    started_at          timestamptz not null,
    finished_at         timestamptz,
    wall_seconds        double
);

-- stage gate ------------------------------------------------------------------------------------

-- One row per (arm, task): the gate's decision.
create table gate_decisions (
    run_id              varchar not null,
    arm                 varchar not null,
    task_id             varchar not null,
    source              varchar not null,      -- the candidate source's name, e.g. replay:codet
    visible_spec_hash   varchar not null,      -- the only suite the gate saw
    decision            varchar not null,      -- delivered | refused
    stop_reason         varchar not null,
    attempts_used       integer not null,
    delivered_attempt   integer,               -- null when refused
    delivered_sha256    varchar,               -- sha256 of the delivered program
    tokens_used         integer not null,
    wall_seconds        double not null,
    primary key (run_id, arm, task_id)
);

-- One row per attempt (candidate drawn) of a gate.
create table gate_attempts (
    run_id              varchar not null,
    arm                 varchar not null,
    task_id             varchar not null,
    attempt             integer not null,      -- 1-based
    candidate_sha256    varchar not null,
    origin              varchar not null,      -- replay:codet | replay:evalplus | openai:<model>
    sample_index        integer,               -- position in the recorded samples (replays)
    extraction          varchar not null,      -- how the program was obtained from the raw output
    program             varchar not null,      -- the program executed
    raw                 varchar not null,      -- the producer's raw output (sample body, chat reply)
    precheck            varchar not null,      -- ok | syntax | forbidden-* | no-entry-point | skipped
    v_verdict           varchar not null,      -- executor verdict on the visible suite | not-run
    v_cases_passed      integer,
    v_cases_total       integer,
    v_detail            varchar not null,      -- first visible failure as fed back (H-MIX) or recorded
    signature           varchar not null,      -- failure signature kind|exception type|message hash; '' on pass
    outcome             varchar not null,      -- delivered | rejected
    prompt_tokens       integer not null,
    completion_tokens   integer not null,
    latency_seconds     double not null,
    exec_seconds        double not null,
    primary key (run_id, arm, task_id, attempt)
);

-- Every text of a gate run, one row per authored part, for the leak audit.
create table gate_messages (
    run_id              varchar not null,
    arm                 varchar not null,
    task_id             varchar not null,
    seq                 integer not null,      -- order within the task's gate run
    attempt             integer not null,
    author              varchar not null,      -- task | harness | model
    purpose             varchar not null,      -- generation | selection | revision_feedback | stop_decision
    role                varchar not null,      -- user | assistant | none (recorded, never sent)
    request             integer,               -- generator request it was sent in (null: not sent)
    chat_index          integer,               -- its chat message's position in that request
    part                integer not null,      -- position within the chat message (parts joined by a blank line)
    text                varchar not null,
    text_sha256         varchar not null,
    primary key (run_id, arm, task_id, seq)
);

-- stage deliveries --------------------------------------------------------------------------------

-- One row per (arm, task): the delivered program on the hidden GT suite.
create table deliveries (
    run_id              varchar not null,
    arm                 varchar not null,
    task_id             varchar not null,
    delivered           boolean not null,
    refused             boolean not null,
    attempts_used       integer not null,
    delivered_attempt   integer,
    candidate_sha256    varchar,
    hidden_spec_hash    varchar not null,
    gt_verdict          varchar,               -- executor verdict on GT; null when refused
    gt_first_failure    integer,               -- first failing GT case (scoring stops there)
    gt_cases_total      integer not null,
    false_delivery      boolean not null,      -- delivered and fails GT
    gt_seconds          double not null,
    primary key (run_id, arm, task_id)
);

-- Views over these tables: sql/views/gate_rates.sql, sql/views/deliveries_paired.sql.
