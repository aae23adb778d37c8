-- Leak-audit verdict counts and comparison items per arm, over every run scanned.
create or replace view leak_arm_summary as
with verdicts as (
    select * from leak_verdicts
),
per_arm as (
    select arm,
           count(distinct run_id)                                 as runs,
           count(*)                                               as records,
           count(*) filter (where verdict = 'clean')              as clean,
           count(*) filter (where verdict = 'unverifiable')       as unverifiable,
           count(*) filter (where verdict = 'violation')          as violation,
           count(*) filter (where v1_flagged)                     as v1_flagged,
           sum(texts)                                             as texts,
           sum(items_v1)                                          as items_v1,
           sum(items_v2)                                          as items_v2,
           sum(v2_hits)                                           as v2_hits,
           sum(v2_violations)                                     as v2_violations,
           count(*) filter (where gt_as_visible)                  as gt_as_visible,
           arm = 'hmix-leaky-gt'                                  as demonstration  -- the deliberately leaky arm
    from verdicts
    group by arm
),
final as (
    select * from per_arm
)
select * from final;
