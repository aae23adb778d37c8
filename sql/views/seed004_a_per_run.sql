-- Seed 004 Tables 15-17: one row per judge run, agent configuration and agent run (issue 22). TSR over
-- all trajectories and per condition; VR = rate of kind = evidence among valid E+ verdicts, overall and
-- per disposition (Avo/Tra/Mit/Acc); the same rate on E-; ER = 1 - VR / E- rate (null when the E- rate
-- is 0). Invalid verdicts stay out of VR and ER and are counted beside them.
create or replace view seed004_per_run as
with verdicts as (
    select * from judge_verdicts
),
per_run as (
    select run_id as judge_run_id, config, run,
           count(*)                                                           as trajectories,
           count(*) filter (where status = 'invalid')                         as invalid_verdicts,
           avg(oracle_passed::int)                                            as tsr,
           avg(oracle_passed::int) filter (where condition = 'E+')            as tsr_e_plus,
           avg(oracle_passed::int) filter (where condition = 'E-')            as tsr_e_minus,
           avg(v_p) filter (where status = 'valid' and condition = 'E+')      as vr,
           avg(v_p) filter (where status = 'valid' and condition = 'E-')      as e_minus_rate,
           avg(v_p) filter (where status = 'valid' and condition = 'E+' and disposition = 'avoid') as vr_avoid,
           avg(v_p) filter (where status = 'valid' and condition = 'E-' and disposition = 'avoid') as e_minus_avoid,
           avg(v_p) filter (where status = 'valid' and condition = 'E+' and disposition = 'transfer') as vr_transfer,
           avg(v_p) filter (where status = 'valid' and condition = 'E-' and disposition = 'transfer') as e_minus_transfer,
           avg(v_p) filter (where status = 'valid' and condition = 'E+' and disposition = 'mitigate') as vr_mitigate,
           avg(v_p) filter (where status = 'valid' and condition = 'E-' and disposition = 'mitigate') as e_minus_mitigate,
           avg(v_p) filter (where status = 'valid' and condition = 'E+' and disposition = 'accept') as vr_accept,
           avg(v_p) filter (where status = 'valid' and condition = 'E-' and disposition = 'accept') as e_minus_accept
    from verdicts
    group by run_id, config, run
),
final as (
    select *,
           1 - vr / nullif(e_minus_rate, 0) as er,
           1 - vr_avoid / nullif(e_minus_avoid, 0) as er_avoid,
           1 - vr_transfer / nullif(e_minus_transfer, 0) as er_transfer,
           1 - vr_mitigate / nullif(e_minus_mitigate, 0) as er_mitigate,
           1 - vr_accept / nullif(e_minus_accept, 0) as er_accept
    from per_run
)
select * from final;
