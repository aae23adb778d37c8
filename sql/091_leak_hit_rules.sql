-- 091_leak_hit_rules (issue 24): hits that scale. Per record, scanner and rule one summary row (places
-- matched, violations, messages, hidden cases, the first places, the distinct material); leak_hits
-- keeps every v2 hit and no longer v1's keyword flood (one row per match per hidden case sharing the
-- text: 10 M rows for 20,000 records). Existing v1 rows are summarised here, then dropped.

create table leak_hit_rules (
    run_id              varchar not null,
    arm                 varchar not null,
    block               varchar not null,
    task_id             varchar not null,
    scanner             varchar not null,      -- v1 | v2
    rule                varchar not null,      -- keyword (v1) | call-expression | hidden-literal | piece | pair
    hits                bigint not null,       -- places matched: (message, offsets, material), one however many hidden cases share it
    violations          bigint not null,       -- of those, v2 violations (v1: 0)
    messages            integer not null,      -- messages with a match
    cases               integer not null,      -- hidden cases the matched material belongs to
    first_offsets       struct(seq integer, start_char integer, end_char integer)[] not null,  -- first places, record order, at most 5
    needles             varchar[] not null,    -- distinct material matched, in order of first match, at most 50
    distinct_needles    integer not null,      -- how many distinct (needles lists at most 50)
    primary key (run_id, arm, block, task_id, scanner, rule)
);

insert into leak_hit_rules
with places as (
    select run_id, arm, block, task_id, scanner, rule, seq, start_char, end_char, needle,
           bool_or(violation) as violation, list(case_index) as cases
    from leak_hits group by all
),
per_rule as (
    select run_id, arm, block, task_id, scanner, rule,
           count(*) as hits,
           count(*) filter (where scanner = 'v2' and violation) as violations,
           count(distinct seq) as messages,
           len(list_distinct(flatten(list(cases)))) as cases,
           list({'seq': seq, 'start_char': start_char, 'end_char': end_char} order by seq, start_char)[1:5]
               as first_offsets,
           list(needle order by seq, start_char) as matched
    from places group by all
)
select run_id, arm, block, task_id, scanner, rule, hits, violations, messages, cases, first_offsets,
       list_distinct(matched)[1:50], len(list_distinct(matched))
from per_rule;

delete from leak_hits where scanner = 'v1';
