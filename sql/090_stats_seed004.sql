-- 090_stats_seed004: the rest of seed 004 appendix M (issue 22). Table 3's CIs on each condition's rate,
-- and M.2's single condition x run interaction test over all configurations. Written by the stats run
-- with the other stats_* tables (acceptgate/stats/seed004.py).

-- One row per (measure, configuration, condition): the run-averaged rate over all units with its
-- percentile bootstrap CI over whole units (the same resamples as the paired effect's CI).
create table stats_condition_rates (
    run_id              varchar not null,
    measure             varchar not null,
    config              varchar not null,
    condition           varchar not null,      -- condition_a or condition_b of stats_effects
    n_units             integer not null,
    runs                integer not null,
    rate                double not null,
    ci_low              double not null,
    ci_high             double not null,
    resamples           integer not null,
    confidence          double not null,
    seed                bigint not null,
    input_sha256        varchar not null,
    primary key (run_id, measure, config, condition)
);

-- One row per measure with >= 2 runs: the overall condition x run interaction (seed 004 M.2: p = 0.43).
create table stats_overall_interaction (
    run_id              varchar not null,
    measure             varchar not null,
    configs             integer not null,
    n_units             integer not null,      -- task pairs every configuration has
    runs                integer not null,
    statistic           double not null,       -- sum over configurations and runs of (Delta_cr - Delta_c)^2
    p                   double not null,       -- run labels permuted within task pairs (jointly for all configurations)
    exact_test          boolean not null,
    lr_statistic        double,                -- binomial GLM likelihood-ratio check of condition x run within configuration
    lr_df               integer,
    lr_p                double,
    resamples           integer not null,
    seed                bigint not null,
    input_sha256        varchar not null,
    primary key (run_id, measure)
);
