-- Latency of the gate service per route and method: count, median, p95 and max (seconds).
create or replace view api_latency as
with calls as (
    select * from api_calls
),
final as (
    select route, method,
           count(*)                                        as calls,
           count(*) filter (where status >= 400)           as refused_or_failed,
           quantile_cont(latency_seconds, 0.5)             as median_seconds,
           quantile_cont(latency_seconds, 0.95)            as p95_seconds,
           max(latency_seconds)                            as max_seconds
    from calls
    group by route, method
)
select * from final;
