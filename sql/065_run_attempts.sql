-- 065_run_attempts: every attempt of every run, whatever its flow (issue 13: crash safety).
-- A flow inserts its attempt as 'running' before it writes anything (acceptgate/pipelines/ledger.py);
-- a successful run ends it 'ok' when it publishes; an error ends it 'failed' with the stage and
-- message; a stop request (Ctrl-C, SIGTERM) ends it 'interrupted' with the stage it was in. A process killed with
-- SIGKILL cannot say anything: its attempt stays 'running' until the next attempt of any run on this
-- host finds the process gone and marks it 'failed' (failure 'process ... ended without finishing').
create table run_attempts (
    run_id          varchar not null,
    attempt         integer not null,      -- 1, 2, ... per run id
    flow            varchar not null,      -- audit | gate | ... (the flow that made the attempt)
    status          varchar not null,      -- running | ok | failed | interrupted
    last_stage      varchar,               -- last stage whose rows this attempt committed
    failed_stage    varchar,               -- the stage that failed (null when unknown, e.g. a kill)
    failure         varchar,
    host            varchar not null,
    pid             integer not null,
    started_at      timestamptz not null,
    finished_at     timestamptz,
    published_at    timestamptz,           -- when its rows reached the analysts' snapshot
    primary key (run_id, attempt)
);
