-- 051_judge: the over-defence judge (issue 12; seed 004 appendices F-H). One judge run = one set of input
-- files (records, answer cards, memory bank, recorded outputs, human labels), one backend, one embedder;
-- its id is derived from their hashes, so a re-run replaces its rows. Stage 'judge' writes all tables.

create table judge_runs (
    run_id              varchar primary key,   -- 'judge-' + 16 hex
    backend             varchar not null,      -- rules | replay | openai:<model>
    embedder            varchar not null,      -- the retrieval encoder's name (says so when it is the hashing fallback)
    records_sha256      varchar not null,
    cards_sha256        varchar not null,
    memory_sha256       varchar not null,
    replay_sha256       varchar,
    labels_sha256       varchar,
    trajectories        integer not null,
    valid_verdicts      integer not null,
    invalid_verdicts    integer not null,      -- judge output that broke the F.2 schema (stored, never coerced)
    invalid_records     integer not null,      -- input records refused (see judge_input_issues)
    acceptgate_version  varchar not null,
    written_at          timestamptz not null
);

-- One row per judged trajectory. F.2 fields are null when status = 'invalid'.
create table judge_verdicts (
    run_id              varchar not null,
    trajectory_id       varchar not null,
    task_id             varchar not null,
    pair_id             varchar not null,
    config              varchar not null,      -- agent configuration
    run                 integer not null,      -- agent run (1..3 in the seed)
    condition           varchar not null,      -- E+ | E-
    disposition         varchar not null,      -- avoid | transfer | mitigate | accept
    status              varchar not null,      -- valid | invalid
    invalid_reason      varchar,               -- why the output broke F.2 (or the backend's error)
    raw_output          varchar not null,      -- the judge's text exactly as received
    prompt_sha256       varchar not null,
    record_sha256       varchar not null,
    over_defence        boolean,
    confidence          double,
    forms               varchar,               -- JSON list
    beyond_minimal      varchar,               -- JSON list
    evidence            varchar,               -- JSON list of {source, quote}
    fact_read           varchar,
    task_done           boolean,
    notes               varchar,
    kind                varchar,               -- evidence | generic | none
    linked_actions      varchar,               -- JSON list
    degree              varchar,               -- minor | clear | none
    v_p                 integer,               -- 1 iff kind = evidence
    oracle_passed       boolean not null,      -- the executable oracle (task success)
    tokens_in           bigint not null,       -- the agent episode's resources (appendix O)
    tokens_out          bigint not null,
    runtime_seconds     double not null,
    judge_tokens_in     bigint not null,
    judge_tokens_out    bigint not null,
    constructed         boolean not null,      -- a constructed example, not a benchmark result
    primary key (run_id, trajectory_id)
);

-- The four exemplars shown to the judge for each trajectory, in prompt order.
create table judge_retrievals (
    run_id              varchar not null,
    trajectory_id       varchar not null,
    rank                integer not null,
    exemplar_id         varchar not null,
    reason              varchar not null,      -- contrast | nearest
    similarity          double not null,       -- cosine of L2-normalised task-description embeddings
    exemplar_task_id    varchar not null,
    exemplar_condition  varchar not null,
    exemplar_label      varchar not null,
    primary key (run_id, trajectory_id, rank)
);

-- What the rule sensor saw in each trajectory.
create table judge_observations (
    run_id              varchar not null,
    trajectory_id       varchar not null,
    seq                 integer not null,
    signal              varchar not null,      -- added-test | backup | guard | fallback | confirmation-request | widened-test-scope
    form                varchar not null,      -- the F.2 form it maps to
    source              varchar not null,      -- record location
    quote               varchar not null,
    primary key (run_id, trajectory_id, seq)
);

-- Input records refused (file, line, field), counted as invalid in every summary.
create table judge_input_issues (
    run_id              varchar not null,
    input               varchar not null,      -- records | cards | memory | human_labels
    source              varchar not null,
    line                integer not null,
    field               varchar not null,
    message             varchar not null,
    primary key (run_id, input, line)
);

-- Human consensus labels given with the run (judge validation, appendix K).
create table judge_human_labels (
    run_id              varchar not null,
    trajectory_id       varchar not null,
    kind                varchar not null,
    primary key (run_id, trajectory_id)
);
