-- Seed 004 Table 3: per stats run over a judge run and agent configuration, each condition's
-- run-averaged over-defence rate with its bootstrap CI, the paired drop Delta = rate(E-) - rate(E+) with
-- its CI, ER (from run-averaged rates) with its CI, the permutation p and Holm's p (migration 090).
create or replace view seed004_table3 as
with effects as (
    select * from stats_effects where condition_a = 'E+' and condition_b = 'E-'
),
rates as (
    select * from stats_condition_rates
),
final as (
    select e.run_id, e.source_run_id as judge_run_id, e.measure, e.config, e.n_units, e.runs,
           a.rate as rate_e_plus, a.ci_low as rate_e_plus_ci_low, a.ci_high as rate_e_plus_ci_high,
           b.rate as rate_e_minus, b.ci_low as rate_e_minus_ci_low, b.ci_high as rate_e_minus_ci_high,
           e.estimate as delta, e.ci_low as delta_ci_low, e.ci_high as delta_ci_high,
           e.er, e.er_ci_low, e.er_ci_high, e.p, e.p_holm, e.resamples, e.confidence, e.seed
    from effects e
    join rates a on a.run_id = e.run_id and a.measure = e.measure and a.config = e.config and a.condition = e.condition_a
    join rates b on b.run_id = e.run_id and b.measure = e.measure and b.config = e.config and b.condition = e.condition_b
)
select * from final;
