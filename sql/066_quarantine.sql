-- 066_quarantine: stage batches that failed their expectations (issue 13). Nothing of such a batch
-- reaches the stage's tables or the analysts' snapshot; it is kept here, one row per table of the
-- batch, with every expectation it failed. Lives in the live file only (never published).
create table quarantine (
    run_id              varchar not null,
    attempt             integer not null,  -- run_attempts.attempt (0: written outside an attempt)
    stage               varchar not null,
    table_name          varchar not null,
    failed_expectations varchar not null,  -- JSON list of {"expectation", "details"}; [] when only another table of the stage failed
    row_count           integer not null,
    rows_json           varchar not null,  -- the batch's rows of table_name, a JSON list of records
    quarantined_at      timestamptz not null,
    primary key (run_id, attempt, stage, table_name)
);
