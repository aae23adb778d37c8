-- 095_score: acceptgate score as a run (one samples file scored against one suite kind of a suites
-- directory). The run id derives from the suites' and samples' hashes and the scoring settings, so a
-- re-run replaces its rows; an attempt is recorded in run_attempts like every other command's.

create table score_runs (
    run_id              varchar primary key,   -- 'score-' + 16 hex of sha256(inputs' hashes, settings), or --run-id
    run_id_origin       varchar not null,      -- 'derived' | 'user' (--run-id)
    pipeline            varchar not null,      -- 'score/1'
    acceptgate_version  varchar not null,
    suites_from         varchar not null,      -- the suites directory (--suites)
    suites_source_sha256 varchar not null,     -- sha256 of the data set file the suites were imported from
    suites_sha256       varchar not null,      -- over every task's id and the spec hash of the suite scored
    samples_from        varchar not null,      -- the samples file (--samples)
    samples_sha256      varchar not null,
    suite               varchar not null,      -- visible | hidden
    profile             varchar not null,      -- default | evalplus
    backend             varchar not null,
    fail_fast           boolean not null,      -- false with --all-cases
    limits              varchar not null,      -- JSON: the sandbox limits (--wall-seconds, --case-seconds, ...)
    gauge               varchar not null,      -- checked | skipped (--no-gauge)
    records             integer,               -- every record of the file (null until the samples are scored)
    scored              integer,               -- samples run
    passed              integer,               -- samples that passed every case run
    invalid             integer,               -- records that are not a scorable sample
    unusable            integer,               -- samples of a task whose suite failed the gauge check
    not_scored          integer,               -- samples of a task without the suite (excluded at import)
    verdict_counts      varchar,               -- JSON: verdict -> records, over the output lines
    status              varchar not null,      -- running | ok | failed | interrupted
    failed_stage        varchar,
    failure             varchar,
    attempts            integer not null,
    first_started_at    timestamptz not null,
    started_at          timestamptz not null,
    finished_at         timestamptz,
    wall_seconds        double
);

-- stage score ------------------------------------------------------------------------------------

-- One row per output line of the command: a scored sample, an unusable one, or an invalid record.
create table score_results (
    run_id              varchar not null,
    line                integer not null,      -- the record's line in the samples file (1-based)
    task_id             varchar,               -- null for a record whose task id could not be read
    sample_index        integer,               -- 0-based among the task's samples; null for an invalid record
    verdict             varchar not null,      -- pass | fail | error | timeout | memory | crash | protocol | invalid | unusable
    cases_failed        integer not null,
    cases_run           integer not null,
    cases_total         integer not null,
    candidate_sha256    varchar,               -- the program run (null for an invalid record)
    wall_seconds        double not null,
    detail              varchar not null,
    profile             varchar,               -- the scoring profile (null only on an invalid record of a file with no scored sample)
    render_hash         varchar,               -- the harness the sample ran against (null for an invalid record)
    primary key (run_id, line)
);
