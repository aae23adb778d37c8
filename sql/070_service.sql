-- 070_service: the HTTP gate service (acceptgate serve-api, issue 14). Its decisions land in the
-- gate tables as one gate run each (run_id 'api-<client>-<decision id>', source 'api:<client>' or
-- 'openai:<model>'); this table keeps every call's latency for the latency summary.
create table api_calls (
    call_id          bigint primary key,     -- the service journal's call id
    client           varchar,                -- null for an unauthenticated call (refused)
    route            varchar not null,       -- the route template, e.g. /v1/tasks/{task_id}/submissions
    method           varchar not null,
    status           integer not null,       -- HTTP status returned
    latency_seconds  double not null,
    called_at        timestamptz not null
);
