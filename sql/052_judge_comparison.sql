-- 052_judge_comparison: two judges on the same trajectories (issue 12; seed 004 appendix K, Table 14).
-- Written by 'acceptgate stats --judge-run MAIN --audit-judge-run AUDIT' with the stats run's other rows.
create table stats_judge_comparison (
    run_id                  varchar not null,
    config                  varchar not null,
    main_run_id             varchar not null,
    audit_run_id            varchar not null,
    n_tasks                 integer not null,      -- tasks with valid E+ verdicts of both judges in every configuration
    rate_main               double not null,       -- VR by the main judge (mean over tasks of per-task rates)
    rate_audit              double not null,
    difference              double not null,       -- audit - main
    overall_difference      double not null,       -- mean over configurations
    centered                double not null,       -- difference - overall_difference
    centered_ci_low         double not null,       -- percentile bootstrap over tasks
    centered_ci_high        double not null,
    interaction_statistic   double not null,       -- sum over configurations of centered^2 (same in every row)
    interaction_p           double not null,       -- configuration labels permuted within tasks
    resamples               integer not null,
    seed                    bigint not null,
    input_sha256            varchar not null,
    primary key (run_id, config)
);
