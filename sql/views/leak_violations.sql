-- Every v2 violation with the text around it: what the harness wrote that it should not have.
create or replace view leak_violations as
with hits as (
    select * from leak_hits where scanner = 'v2' and violation
),
messages as (
    select run_id, arm, task_id, seq, text from gate_messages
),
final as (
    select h.run_id, h.arm, h.block, h.task_id, h.seq, h.purpose, h.rule, h.kind, h.case_index,
           h.start_char, h.end_char, h.needle,
           substr(m.text, greatest(h.start_char - 40, 0) + 1, (h.end_char - greatest(h.start_char - 40, 0)) + 40)
               as context   -- null for records from history files (their texts are not in the warehouse)
    from hits h
    left join messages m on m.run_id = h.run_id and m.arm = h.arm and m.task_id = h.task_id
                        and m.seq = h.seq and h.block = ''
)
select * from final;
