-- 050_stats: paired statistics (issue 12; seed 004 appendix M). One stats run = one source (a gate run,
-- or a judge run), one seed, one number of resamples; its id is derived from exactly those and the
-- inputs' hash, so a re-run replaces its rows and reproduces them exactly. Holm's family is the
-- configurations of one measure within one stats run.

create table stats_runs (
    run_id              varchar primary key,   -- 'stats-' + 16 hex of sha256(kind, source run, inputs, seed, resamples, confidence)
    kind                varchar not null,      -- gate | judge
    source_run_id       varchar not null,      -- the gate run or judge run the inputs came from
    conditions          varchar not null,      -- 'a,b': Delta = rate(b) - rate(a)
    measures            varchar not null,      -- comma-separated
    seed                bigint not null,
    resamples           integer not null,
    confidence          double not null,
    input_sha256        varchar not null,      -- sha256 of the canonical input rows (unit, condition, run, value)
    acceptgate_version  varchar not null,
    written_at          timestamptz not null
);

-- One row per (measure, configuration): the paired effect with its CI and tests.
create table stats_effects (
    run_id              varchar not null,
    measure             varchar not null,      -- e.g. false_delivery, delivered, violation (kind = evidence)
    config              varchar not null,      -- the configuration compared (a gate arm vs the baseline; an agent configuration)
    condition_a         varchar not null,
    condition_b         varchar not null,
    unit                varchar not null,      -- the resampling unit: task | task pair
    n_units             integer not null,
    runs                integer not null,      -- runs per condition, averaged within a unit first (eq. 5)
    rate_a              double not null,       -- over all n_units units (runs averaged)
    rate_b              double not null,
    estimate            double not null,       -- Delta = rate_b - rate_a (mean of per-unit differences)
    ci_low              double not null,       -- percentile bootstrap over whole units
    ci_high             double not null,
    p                   double not null,       -- two-sided paired permutation test (whole conditions swapped within a unit)
    p_holm              double not null,       -- Holm over the configurations of this measure
    er                  double,                -- 1 - rate_a / rate_b (null when rate_b = 0)
    er_ci_low           double,
    er_ci_high          double,
    er_mean_of_runs     double,                -- ER per run, averaged (differs from er by up to ~0.2 pp in the seed)
    resamples           integer not null,
    permutations        integer not null,      -- rows of the null distribution (2**n_units when exact)
    exact_test          boolean not null,
    confidence          double not null,
    seed                bigint not null,
    input_sha256        varchar not null,
    source_run_id       varchar not null,
    primary key (run_id, measure, config)
);

-- One row per (measure, configuration) with at least two runs: seed 004 Table 18.
create table stats_stability (
    run_id                  varchar not null,
    measure                 varchar not null,
    config                  varchar not null,
    n_units                 integer not null,
    runs                    integer not null,
    per_run_delta           double[] not null,  -- run 1..R
    per_run_ci_low          double[] not null,
    per_run_ci_high         double[] not null,
    pooled_delta            double not null,
    delta_range             double not null,    -- max - min of per_run_delta
    interaction_statistic   double not null,    -- sum over runs of (per-run Delta - pooled Delta)^2
    interaction_p           double not null,    -- run labels permuted within units
    exact_test              boolean not null,
    resamples               integer not null,
    confidence              double not null,
    seed                    bigint not null,
    input_sha256            varchar not null,
    primary key (run_id, measure, config)
);

-- Agreement between two raters on the same records (judge vs human consensus; two judges).
create table stats_agreement (
    run_id              varchar not null,
    rater_a             varchar not null,      -- e.g. human, judge:rules, judge:replay
    rater_b             varchar not null,
    label               varchar not null,      -- kind (evidence|generic|none) | v_p (kind = evidence, 0/1)
    n_records           integer not null,
    accuracy            double not null,
    kappa               double,                -- null when undefined (one label throughout)
    input_sha256        varchar not null,
    primary key (run_id, rater_a, rater_b, label)
);
