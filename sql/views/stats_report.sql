-- Paired effects with their stats run's settings, in percentage points, one row per measure and
-- configuration (issue 12). Delta = rate_b - rate_a; every rate is over all n_units units.
create or replace view stats_report as
with effects as (
    select * from stats_effects
),
runs as (
    select run_id, kind, written_at from stats_runs
),
final as (
    select e.run_id, r.kind, e.source_run_id, e.measure, e.config,
           e.condition_a, e.condition_b, e.unit, e.n_units, e.runs,
           round(100 * e.rate_a, 2)   as rate_a_pct,
           round(100 * e.rate_b, 2)   as rate_b_pct,
           round(100 * e.estimate, 2) as delta_pp,
           round(100 * e.ci_low, 2)   as ci_low_pp,
           round(100 * e.ci_high, 2)  as ci_high_pp,
           e.p, e.p_holm, e.er, e.er_mean_of_runs,
           e.resamples, e.seed, e.input_sha256, r.written_at,
           r.kind = 'gate' and 'hmix-leaky-gt' in (e.condition_a, e.condition_b)
                                      as demonstration  -- an arm deliberately broken (sees GT): not a result
    from effects e
    join runs r using (run_id)
)
select * from final;
