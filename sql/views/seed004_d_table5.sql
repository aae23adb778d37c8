-- Seed 004 Table 5: one row per judge run and disposition. ER is the mean over configurations of the
-- configuration-level ER of seed004_table2 (M.1: so it need not equal 1 - mean VR / mean E- rate of the
-- same row); VR and the E- rate are means over configurations too.
create or replace view seed004_table5 as
with table2 as (
    select * from seed004_table2
),
long as (
    select judge_run_id, config, 'avoid' as disposition, vr_avoid as vr, e_minus_avoid as e_minus_rate, er_avoid as er from table2
    union all
    select judge_run_id, config, 'transfer' as disposition, vr_transfer as vr, e_minus_transfer as e_minus_rate, er_transfer as er from table2
    union all
    select judge_run_id, config, 'mitigate' as disposition, vr_mitigate as vr, e_minus_mitigate as e_minus_rate, er_mitigate as er from table2
    union all
    select judge_run_id, config, 'accept' as disposition, vr_accept as vr, e_minus_accept as e_minus_rate, er_accept as er from table2
),
final as (
    select judge_run_id, disposition,
           count(*)           as configs,
           avg(vr)            as vr,
           avg(e_minus_rate)  as e_minus_rate,
           avg(er)            as er
    from long
    where vr is not null or e_minus_rate is not null  -- a disposition the configuration has no verdict in
    group by judge_run_id, disposition
)
select * from final;
