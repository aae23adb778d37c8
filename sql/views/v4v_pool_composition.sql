-- Per certification run: how many candidates of each class, kind and label the pools hold, over how many
-- tasks, and how many proposed candidates the oracle check dropped or relabelled.
create or replace view v4v_pool_composition as
with candidates as (
    select * from v4v_candidates
),
checks as (
    select * from v4v_label_checks
),
kept as (
    select run_id, class, kind, label, count(*) as candidates, count(distinct task_id) as tasks
    from candidates
    group by run_id, class, kind, label
),
proposed as (
    select run_id, kind,
           count(*) filter (where action = 'dropped')    as dropped,
           count(*) filter (where action = 'relabelled') as relabelled_away
    from checks
    group by run_id, kind
),
final as (
    select k.*, coalesce(p.dropped, 0) as dropped, coalesce(p.relabelled_away, 0) as relabelled_away
    from kept k left join proposed p on p.run_id = k.run_id and p.kind = k.kind
)
select * from final order by run_id, class, kind;
