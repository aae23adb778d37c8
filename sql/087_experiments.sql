-- 087_experiments: seed experiments re-run on this project's data (acceptgate experiment NAME). One
-- experiment run = one experiment, its parameters and its inputs' hash (the run id is derived from
-- them, so a re-run replaces its rows). Each row puts the seed's figure beside the measured one.

create table experiment_runs (
    run_id              varchar primary key,   -- 'exp-' + 16 hex of sha256(experiment, source, params, inputs)
    experiment          varchar not null,      -- seed000-layer4 | r532 | seed002
    source              varchar not null,      -- what was measured: a gate run id, a data file, 'seed counts'
    params              varchar not null,      -- JSON of the command's parameters
    input_sha256        varchar not null,
    acceptgate_version  varchar not null
);

create table experiment_rows (
    run_id              varchar not null,
    row_no              integer not null,      -- order of the seed's table
    row_key             varchar not null,      -- stable id of the row, e.g. 'exec_smuggling/data'
    label               varchar not null,      -- the row as the seed names it
    seed_figure         varchar,               -- the seed's figure as printed; null when the seed gives none
    measured            double,                -- share in [0, 1], ratio (a relative change), or percentage points / 100
    measured_text       varchar not null,      -- the measured figure as printed
    unit                varchar not null,      -- share | ratio | pp | count | flag
    numerator           bigint,
    denominator         bigint,
    detail              varchar not null,      -- JSON: what the figure was computed from
    primary key (run_id, row_key)
);
