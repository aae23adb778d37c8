-- Gauge check per run and suite kind: how many suites are usable, and why the others are not.
create or replace view gauge_summary as
with

checks as (
    select run_id, suite, passed, reference_verdict, wrong_total, wrong_blocked
    from gauge_checks
),

final as (
    select
        run_id,
        suite,
        count(*) as suites_checked,
        count(*) filter (where passed) as suites_usable,
        count(*) filter (where not passed) as suites_failed,
        count(*) filter (where reference_verdict <> 'pass') as reference_failed,
        count(*) filter (where wrong_blocked < wrong_total) as wrong_sample_not_blocked,
        sum(wrong_total)::bigint as wrong_samples_run,
        sum(wrong_blocked)::bigint as wrong_samples_blocked,
        round(count(*) filter (where passed) / count(*), 4) as usable_share
    from checks
    group by run_id, suite
)

select * from final
order by run_id, suite
