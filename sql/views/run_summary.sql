-- One row per run: what was imported, excluded, checked and executed.
create or replace view run_summary as
with

run_rows as (
    select run_id, run_id_origin, status, failed_stage, dataset, backend, task_limit, attempts,
           started_at, finished_at, wall_seconds
    from runs
),

imported as (
    select run_id, count(*) as tasks_imported
    from tasks
    group by run_id
),

exclusions as (
    select run_id,
           count(distinct task_id) filter (where excluded = 'task') as tasks_excluded,
           count(*) filter (where excluded = 'case') as cases_excluded
    from import_issues
    group by run_id
),

suite_counts as (
    select run_id, count(*) as suites, sum(case_count)::bigint as cases
    from suites
    group by run_id
),

gauge as (
    select run_id,
           count(*) filter (where passed) as suites_usable,
           count(*) filter (where not passed) as suites_failed_gauge
    from gauge_checks
    group by run_id
),

execution_counts as (
    select run_id,
           count(*) as executions,
           count(*) filter (where verdict = 'pass') as executions_passed
    from executions
    group by run_id
),

final as (
    select
        r.*,
        coalesce(i.tasks_imported, 0) as tasks_imported,
        coalesce(x.tasks_excluded, 0) as tasks_excluded,
        coalesce(x.cases_excluded, 0) as cases_excluded,
        coalesce(s.suites, 0) as suites,
        coalesce(s.cases, 0) as cases,
        coalesce(g.suites_usable, 0) as suites_usable,
        coalesce(g.suites_failed_gauge, 0) as suites_failed_gauge,
        coalesce(e.executions, 0) as executions,
        coalesce(e.executions_passed, 0) as executions_passed
    from run_rows r
    left join imported i using (run_id)
    left join exclusions x using (run_id)
    left join suite_counts s using (run_id)
    left join gauge g using (run_id)
    left join execution_counts e using (run_id)
)

select * from final
