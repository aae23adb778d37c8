-- False-delivery rates per gate run and arm, each named by its denominator (SYSTEM.md section 3).
create or replace view gate_rates as
with deliveries as (
    select * from deliveries
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
    select *,
           false_deliveries / tasks::double                  as false_rate_over_all_tasks,
           false_deliveries / nullif(delivered, 0)::double   as false_rate_over_delivered,
           arm = 'hmix-leaky-gt'                             as demonstration  -- deliberately broken (sees GT): not a result
    from per_arm
)
select * from final;
