-- Suites that failed the gauge check, per run, suite kind and reason (a suite may have several).
create or replace view gauge_failure_reasons as
with

failed as (
    select run_id, task_id, suite, unnest(reasons) as reason
    from gauge_checks
    where not passed
),

final as (
    select
        run_id, suite, reason,
        count(*) as suites,
        list(task_id order by task_id)[1:5] as example_tasks
    from failed
    group by run_id, suite, reason
)

select * from final
order by run_id, suite, suites desc, reason
