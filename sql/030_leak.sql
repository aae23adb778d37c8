-- 030_leak: the leak audit (issue 10). Records (run, arm, block, task) from gate_* tables or jsonl
-- history files are scanned by v1 (keyword) and v2 (authorship); every hit and every verdict is kept.
-- A record's current verdict is replaced when it is scanned again; a record whose inputs hash
-- (record content, task material, scanner and matcher versions) is unchanged is not scanned again.
-- Allowed values are declared in expectations/<table>.json.

-- One row per scan: the records of one run scanned together, with the scan's controls.
create table leak_scans (
    scan_id             varchar primary key,   -- sha256 over the run id, matcher and the records' inputs hashes
    run_id              varchar not null,      -- the run whose records were scanned
    origin              varchar not null,      -- warehouse | history:FILE
    scanner_version     varchar not null,      -- leak-scan/1
    matcher             varchar not null,      -- aho | polars | disabled
    records             integer not null,      -- records scanned in this scan
    control_passed      boolean not null,      -- the planted leak was caught at its offsets
    control_detail      varchar not null,
    negative_passed     boolean not null,      -- the same material in model/task text was no v2 violation
    negative_detail     varchar not null,
    control_record      varchar not null,      -- run/arm/block/task whose message was copied ('' if none)
    items_v1            bigint not null,       -- comparison items (texts x needles) of the scan
    items_v2            bigint not null,
    wall_seconds        double not null,
    scanned_at          timestamptz not null
);

-- The current verdict of each record.
create table leak_verdicts (
    run_id              varchar not null,
    arm                 varchar not null,
    block               varchar not null,      -- '' when the run has no blocks (gate runs)
    task_id             varchar not null,
    scan_id             varchar not null,      -- the scan that produced it (leak_scans)
    origin              varchar not null,      -- warehouse | FILE:LINE
    started_at          timestamptz,           -- the run's (or record's) start, for date-range backfills
    finished            boolean not null,      -- the record's run was closed
    verdict             varchar not null,      -- clean | unverifiable | violation
    reasons             varchar[] not null,    -- why (empty when clean)
    texts               integer not null,      -- messages with a text
    v1_hits             integer not null,
    v1_flagged          boolean not null,      -- v1 (keyword) would have flagged the record
    v2_hits             integer not null,      -- v2 hits, violations or not (model/task text, quoted output)
    v2_violations       integer not null,
    gt_as_visible       boolean not null,      -- the gate ran GT as its visible suite (hash evidence): a violation
    items_v1            bigint not null,
    items_v2            bigint not null,
    inputs_sha256       varchar not null,      -- record content + material + scanner + matcher
    primary key (run_id, arm, block, task_id)
);

-- Every hit of either scanner.
create table leak_hits (
    run_id              varchar not null,
    arm                 varchar not null,
    block               varchar not null,
    task_id             varchar not null,
    scanner             varchar not null,      -- v1 | v2
    hit_index           integer not null,      -- order within the record and scanner
    seq                 integer not null,      -- the message (gate_messages.seq)
    author              varchar,               -- task | harness | model (null: lost)
    purpose             varchar not null,
    start_char          integer not null,      -- character offsets in the message text, end exclusive
    end_char            integer not null,
    needle              varchar not null,      -- the matched hidden material
    kind                varchar not null,      -- call | args | arg | expected | piece
    case_index          integer not null,      -- the hidden case in the GT suite
    rule                varchar not null,      -- keyword (v1) | call-expression | hidden-literal | piece | pair
    violation           boolean not null,
    why_not             varchar not null,      -- v2 non-violation: task-written | model-written | author-unknown | model-output
    primary key (run_id, arm, block, task_id, scanner, hit_index)
);

-- Views: sql/views/leak_run_summary.sql, leak_arm_summary.sql, leak_violations.sql.
