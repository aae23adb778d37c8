-- Per certification run: how many candidates of each class, kind, label and part (published or held out)
-- the pools hold, over how many tasks, and how many GT disagreed with (findings: none relabelled) and
-- how many of those were excluded because their construction was shown wrong.
create or replace view v4v_pool_composition as
with candidates as (
    select *, coalesce(part, 'published') as pool_part from v4v_candidates
),
findings as (
    select * from v4v_findings
),
proposed as (
    select run_id, class, kind, label, pool_part as part, count(*) as candidates, count(distinct task_id) as tasks
    from candidates
    group by run_id, class, kind, label, pool_part
),
found as (
    select run_id, kind, part,
           count(*)                                        as findings,
           count(*) filter (where action = 'excluded')    as excluded
    from findings
    group by run_id, kind, part
),
final as (
    select p.*, coalesce(f.findings, 0) as findings, coalesce(f.excluded, 0) as excluded
    from proposed p left join found f on f.run_id = p.run_id and f.kind = p.kind and f.part = p.part
)
select * from final order by run_id, class, kind, part;
