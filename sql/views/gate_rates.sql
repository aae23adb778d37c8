-- False-delivery rates per gate run and arm, each named by its denominator (SYSTEM.md section 3), beside
-- the measured FPR_h of the V that gated the arm (the mean over its tasks of V's FPR on the attacks of
-- each task's certified pool; null for OFF, which delivers ungated, and for --no-certify runs), and what
-- the rate is: a gate, no gate (OFF), or resampling (H-MIX on a replayed samples file: its feedback
-- reached no model, so its arm redraws recorded samples rather than revising them).
create or replace view gate_rates as
with deliveries as (
    select * from deliveries
),
decisions as (
    select run_id, arm, avg(v_fpr_h) as v_fpr_h, count(v_fpr_h) as v_fpr_h_tasks,
           min(certification) filter (where certification <> 'skipped') as certify_run
    from gate_decisions
    group by run_id, arm
),
runs as (
    select run_id, source, coalesce(certify, 'skipped') as certify from gate_runs
),
per_arm as (
    select run_id, arm,
           count(*)                                   as tasks,
           count(*) filter (where delivered)          as delivered,
           count(*) filter (where refused)            as refused,
           count(*) filter (where false_delivery)     as false_deliveries
    from deliveries
    group by run_id, arm
),
final as (
    select p.*,
           p.false_deliveries / p.tasks::double                  as false_rate_over_all_tasks,
           p.false_deliveries / nullif(p.delivered, 0)::double   as false_rate_over_delivered,
           p.arm = 'hmix-leaky-gt'                               as demonstration,  -- deliberately broken (sees GT): not a result
           case when p.arm = 'off' then null else d.v_fpr_h end  as v_fpr_h,          -- %, V's measured FPR_h
           case when p.arm = 'off' then 0 else coalesce(d.v_fpr_h_tasks, 0) end as v_fpr_h_tasks,
           d.certify_run,
           coalesce(r.certify, 'skipped')                        as certify,
           case when p.arm = 'off' then 'no gate'
                when p.arm like 'hmix%' and split_part(r.source, ':', 1) in ('codet', 'evalplus') then 'resampling'
                else 'gate' end                                  as rate_kind
    from per_arm p
    left join decisions d using (run_id, arm)
    left join runs r using (run_id)
)
select * from final;
