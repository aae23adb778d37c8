-- Two arms of a gate run side by side per task (for paired statistics: McNemar, bootstrap over tasks).
create or replace view deliveries_paired as
with deliveries as (
    select * from deliveries
),
pairs as (
    select a.run_id, a.task_id,
           a.arm as arm_a, b.arm as arm_b,
           a.delivered as a_delivered, a.false_delivery as a_false_delivery, a.gt_verdict as a_gt_verdict,
           b.delivered as b_delivered, b.false_delivery as b_false_delivery, b.gt_verdict as b_gt_verdict,
           a.delivered and b.delivered and a.candidate_sha256 = b.candidate_sha256 as same_program
    from deliveries a
    join deliveries b on a.run_id = b.run_id and a.task_id = b.task_id and a.arm < b.arm
),
final as (
    select * from pairs
)
select * from final;
