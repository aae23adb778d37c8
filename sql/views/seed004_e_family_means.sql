-- Seed 004's family means ("Claude mean", "GPT mean"): one row per judge run and model family, the
-- unweighted mean over the family's configurations of seed004_table2. The family is the configuration
-- name up to its first '/' (e.g. 'claude/opus-5'), or else up to its first '-' (e.g. 'gpt-5.6-sol').
create or replace view seed004_family_means as
with table2 as (
    select *,
           case when contains(config, '/') then split_part(config, '/', 1)
                else split_part(config, '-', 1) end as family
    from seed004_table2
),
final as (
    select judge_run_id, family,
           count(*)  as configs,
           string_agg(config, ',' order by config) as members,
           avg(tsr) as tsr,
           avg(tsr_e_plus) as tsr_e_plus,
           avg(tsr_e_minus) as tsr_e_minus,
           avg(vr) as vr,
           avg(vr_avoid) as vr_avoid,
           avg(vr_transfer) as vr_transfer,
           avg(vr_mitigate) as vr_mitigate,
           avg(vr_accept) as vr_accept,
           avg(er) as er,
           avg(er_avoid) as er_avoid,
           avg(er_transfer) as er_transfer,
           avg(er_mitigate) as er_mitigate,
           avg(er_accept) as er_accept
    from table2
    group by judge_run_id, family
)
select * from final;
