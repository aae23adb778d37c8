-- Per certification run, verifier and gate: on how many tasks the gate passed, failed or did not apply.
create or replace view v4v_certificates as
with gates as (
    select * from v4v_gates
),
per_gate as (
    select run_id, verifier, gate,
           count(*)                                  as tasks,
           count(*) filter (where status = 'pass')   as passed,
           count(*) filter (where status = 'fail')   as failed,
           count(*) filter (where status = 'n/a')    as not_applicable
    from gates
    group by run_id, verifier, gate
),
final as (
    select *, failed = 0 and passed > 0 as certified
    from per_gate
)
select * from final;
