-- Per certification run, verifier and gate (or check): on how many tasks it passed, failed or did not apply.
-- Only the source verifier (GT) certifies a task, through the six gates; every other verifier is measured
-- on the certified tasks and checked for repeatability and provenance, so `certified` is false for it.
create or replace view v4v_certificates as
with gates as (
    select * from v4v_gates
),
roles as (
    select run_id, verifier, coalesce(role, 'measured') as role from v4v_verifier_summary
),
per_gate as (
    select g.run_id, g.verifier, g.gate,
           count(*)                                  as tasks,
           count(*) filter (where status = 'pass')   as passed,
           count(*) filter (where status = 'fail')   as failed,
           count(*) filter (where status = 'n/a')    as not_applicable
    from gates g
    group by g.run_id, g.verifier, g.gate
),
final as (
    select p.*, coalesce(r.role, 'measured') as role,
           coalesce(r.role, 'measured') = 'source' and failed = 0 and passed > 0 as certified
    from per_gate p left join roles r using (run_id, verifier)
)
select * from final;
