-- latest_runs: the newest published run of each flow (audit, gate, ...): "the latest run" in a query
-- is `where run_id = (select run_id from latest_runs where flow = 'audit')`.
create or replace view latest_runs as
with attempts as (
    select * from run_attempts
),
published as (
    select flow, run_id, published_at from attempts where status = 'ok' and published_at is not null
),
final as (
    select flow, arg_max(run_id, published_at) as run_id, max(published_at) as published_at
    from published
    group by flow
)
select * from final
