-- Executions per run, suite kind (visible V / hidden GT), candidate role and verdict.
create or replace view executions_by_verdict as
with

execution_rows as (
    select run_id, suite, role, verdict
    from executions
),

counted as (
    select run_id, suite, role, verdict, count(*) as executions
    from execution_rows
    group by run_id, suite, role, verdict
),

final as (
    select
        run_id, suite, role, verdict, executions,
        -- share of this verdict among the run's executions of the same suite kind and role
        round(executions / sum(executions) over (partition by run_id, suite, role), 4) as share
    from counted
)

select * from final
order by run_id, suite, role, executions desc
