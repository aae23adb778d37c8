-- 001_core: the audit warehouse (issue 2).
-- Every row carries the run id and the content hashes of what it describes. Each table belongs to
-- exactly one stage of the audit flow; a stage replaces its rows for its run in one transaction, so a
-- re-run of the same run id leaves the same rows (see sql/README.md).
-- Allowed values (verdicts, suite kinds, roles, statuses) are declared once, in expectations/<table>.json.

-- One row per run id; upserted (attempts counts re-runs of the same run id).
create table runs (
    run_id              varchar primary key,
    run_id_origin       varchar not null,      -- 'derived' (from the inputs) | 'user' (--run-id)
    pipeline            varchar not null,      -- version of the audit pipeline, e.g. 'audit/1'
    acceptgate_version  varchar not null,
    dataset             varchar not null,      -- 'humaneval'
    source              varchar not null,      -- where the data came from
    source_sha256       varchar not null,
    backend             varchar not null,      -- sandbox backend: local | docker | ...
    task_limit          integer,               -- --limit; null = all tasks
    status              varchar not null,      -- running | ok | failed | interrupted
    failed_stage        varchar,
    failure             varchar,
    attempts            integer not null,
    first_started_at    timestamptz not null,
    started_at          timestamptz not null,
    finished_at         timestamptz,
    wall_seconds        double
);

-- Which stages of a run were written, with how many rows and how many expectations they passed.
create table run_stages (
    run_id                  varchar not null,
    stage                   varchar not null,  -- import | suites | gauge | execute
    rows_written            integer not null,
    expectations_checked    integer not null,
    written_at              timestamptz not null,
    primary key (run_id, stage)
);

-- stage import ---------------------------------------------------------------------------------

-- Tasks the importer could express (excluded tasks are in import_issues with excluded = 'task').
create table tasks (
    run_id              varchar not null,
    task_id             varchar not null,
    dataset             varchar not null,
    entry_point         varchar not null,
    prompt_sha256       varchar not null,
    reference_sha256    varchar not null,
    prompt              varchar not null,      -- the public statement the generator sees
    contract            varchar not null,      -- public input contract ('' when the dataset has none)
    wrong_samples       integer not null,
    primary key (run_id, task_id)
);

-- Programs the audit runs: each task's reference and its known wrong samples.
create table candidates (
    run_id              varchar not null,
    task_id             varchar not null,
    candidate_sha256    varchar not null,      -- sha256 of source (UTF-8)
    role                varchar not null,      -- reference | wrong
    label               varchar not null,      -- 'reference' or the wrong sample's label
    source              varchar not null,
    primary key (run_id, task_id, candidate_sha256)
);

-- Tasks, suites and cases the importer could not express as a SuiteSpec: recorded, never dropped.
create table import_issues (
    run_id              varchar not null,
    issue_index         integer not null,      -- position in the importer's (deterministic) order
    task_id             varchar not null,
    reason              varchar not null,      -- short stable code, e.g. 'property-check'
    detail              varchar not null,
    suite               varchar,               -- visible | hidden | null (the whole task)
    case_index          integer,               -- index in the source (assert, docstring example)
    excluded            varchar not null,      -- what was left out: case | suite | task | none (kept, noted)
    primary key (run_id, issue_index)
);

-- stage suites ---------------------------------------------------------------------------------

create table suites (
    run_id              varchar not null,
    task_id             varchar not null,
    suite               varchar not null,      -- visible (V) | hidden (GT)
    spec_hash           varchar not null,      -- sha256 of the canonical SuiteSpec
    render_hash         varchar not null,      -- sha256 of the rendered harness program
    renderer            varchar not null,      -- renderer version the render_hash belongs to
    dialect             varchar not null,
    entry_point         varchar not null,
    case_count          integer not null,
    spec_json           varchar not null,      -- the canonical SuiteSpec (loads back to spec_hash)
    primary key (run_id, task_id, suite)
);

-- Cases are content-addressed by their suite's spec_hash.
create table cases (
    run_id              varchar not null,
    spec_hash           varchar not null,
    case_index          integer not null,
    args_text           varchar not null,      -- canonical literal spellings
    kwargs_text         varchar not null,
    expected_text       varchar not null,
    primary key (run_id, spec_hash, case_index)
);

-- stage gauge ----------------------------------------------------------------------------------

-- The gauge check per suite: the reference passes and every known wrong sample is blocked.
create table gauge_checks (
    run_id              varchar not null,
    task_id             varchar not null,
    suite               varchar not null,
    spec_hash           varchar not null,
    render_hash         varchar not null,
    passed              boolean not null,      -- false: the suite is not used
    reasons             varchar[] not null,    -- why it failed (empty when passed)
    reference_sha256    varchar not null,
    reference_verdict   varchar not null,
    wrong_total         integer not null,
    wrong_blocked       integer not null,      -- wrong samples whose verdict is not pass
    primary key (run_id, task_id, suite)
);

-- stage execute --------------------------------------------------------------------------------

-- One candidate against one suite in one sandbox run.
create table executions (
    run_id              varchar not null,
    task_id             varchar not null,
    suite               varchar not null,
    candidate_sha256    varchar not null,
    spec_hash           varchar not null,
    render_hash         varchar not null,
    role                varchar not null,      -- reference | wrong
    label               varchar not null,
    verdict             varchar not null,      -- pass | fail | error | timeout | memory | crash | protocol
    detail              varchar not null,
    exit                varchar not null,
    cases_total         integer not null,      -- cases in the suite
    cases_passed        integer not null,
    cases_recorded      integer not null,      -- rows in case_results (fewer than total after fail-fast or a crash)
    wall_seconds        double not null,
    backend             varchar not null,
    isolation           varchar not null,      -- JSON: what the sandbox enforced and what it could not
    executed_in         varchar not null,      -- gauge (reused from the gauge check) | execute
    primary key (run_id, task_id, suite, candidate_sha256)
);

create table case_results (
    run_id              varchar not null,
    task_id             varchar not null,
    suite               varchar not null,
    candidate_sha256    varchar not null,
    case_index          integer not null,
    spec_hash           varchar not null,
    status              varchar not null,      -- pass | fail | error | timeout | memory | crash | protocol
    args_text           varchar,               -- kept for non-passing cases (truncated)
    got_text            varchar,
    want_text           varchar,
    error_type          varchar,
    message             varchar,
    primary key (run_id, task_id, suite, candidate_sha256, case_index)
);
