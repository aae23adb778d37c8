-- Seed 004 Table 2: one row per judge run and agent configuration, the per-run figures of
-- seed004_per_run averaged over the runs. ER here is the mean of the per-run ERs, as the seed's Table 2
-- computes it (M.1: Table 3's ER, from run-averaged rates, may differ by up to ~0.2 pp).
create or replace view seed004_table2 as
with per_run as (
    select * from seed004_per_run
),
final as (
    select judge_run_id, config,
           count(*)                as runs,
           sum(trajectories)       as trajectories,
           sum(invalid_verdicts)   as invalid_verdicts,
           avg(tsr) as tsr,
           avg(tsr_e_plus) as tsr_e_plus,
           avg(tsr_e_minus) as tsr_e_minus,
           avg(vr) as vr,
           avg(vr_avoid) as vr_avoid,
           avg(vr_transfer) as vr_transfer,
           avg(vr_mitigate) as vr_mitigate,
           avg(vr_accept) as vr_accept,
           avg(e_minus_rate) as e_minus_rate,
           avg(e_minus_avoid) as e_minus_avoid,
           avg(e_minus_transfer) as e_minus_transfer,
           avg(e_minus_mitigate) as e_minus_mitigate,
           avg(e_minus_accept) as e_minus_accept,
           avg(er) as er,
           avg(er_avoid) as er_avoid,
           avg(er_transfer) as er_transfer,
           avg(er_mitigate) as er_mitigate,
           avg(er_accept) as er_accept
    from per_run
    group by judge_run_id, config
)
select * from final;
