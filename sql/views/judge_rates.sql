-- Per judge run and agent configuration: TSR over all trajectories, VR over valid E+ verdicts (overall and
-- per disposition), the E- rate, ER = 1 - VR / E- rate, with the invalid verdicts counted beside them.
create or replace view judge_rates as
with verdicts as (
    select * from judge_verdicts
),
per_config as (
    select run_id, config,
           count(*)                                                                as trajectories,
           count(*) filter (where status = 'invalid')                              as invalid_verdicts,
           avg(oracle_passed::int)                                                 as tsr,
           count(*) filter (where status = 'valid' and condition = 'E+')           as vr_denominator,
           avg(v_p) filter (where status = 'valid' and condition = 'E+')           as vr,
           avg(v_p) filter (where status = 'valid' and condition = 'E-')           as e_minus_rate,
           avg(v_p) filter (where status = 'valid' and condition = 'E+' and disposition = 'avoid')    as vr_avoid,
           avg(v_p) filter (where status = 'valid' and condition = 'E+' and disposition = 'transfer') as vr_transfer,
           avg(v_p) filter (where status = 'valid' and condition = 'E+' and disposition = 'mitigate') as vr_mitigate,
           avg(v_p) filter (where status = 'valid' and condition = 'E+' and disposition = 'accept')   as vr_accept
    from verdicts
    group by run_id, config
),
final as (
    select *, 1 - vr / nullif(e_minus_rate, 0) as er
    from per_config
)
select * from final;
