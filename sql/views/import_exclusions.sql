-- What the importer left out, per run, granularity (task / suite / case) and reason.
create or replace view import_exclusions as
with

issues as (
    select run_id, task_id, reason, excluded
    from import_issues
),

final as (
    select
        run_id,
        excluded,
        reason,
        count(*) as issues,
        count(distinct task_id) as tasks_affected,
        list(distinct task_id order by task_id)[1:5] as example_tasks
    from issues
    group by run_id, excluded, reason
)

select * from final
order by run_id, excluded, issues desc, reason
