-- Resource accounting per configuration (seed 004 appendix O; issue 12): episodes, tokens in/out and
-- runtime. For gate runs a configuration is (gate run, arm) and an episode is one task's gate; for
-- judge runs it is the agent configuration and an episode is one trajectory (model x condition x run).
create or replace view agent_resources as
with attempts as (
    select * from gate_attempts
),
decisions as (
    select * from gate_decisions
),
gate_side as (
    select 'gate' as source, d.run_id, d.arm as config,
           count(*)                                   as episodes,
           sum(d.attempts_used)                       as calls,
           coalesce(sum(a.tokens_in), 0)              as tokens_in,
           coalesce(sum(a.tokens_out), 0)             as tokens_out,
           sum(d.wall_seconds)                        as runtime_seconds
    from decisions d
    left join (select run_id, arm, task_id, sum(prompt_tokens) as tokens_in,
                      sum(completion_tokens) as tokens_out
               from attempts group by run_id, arm, task_id) a
      on a.run_id = d.run_id and a.arm = d.arm and a.task_id = d.task_id
    group by d.run_id, d.arm
),
verdicts as (
    select * from judge_verdicts
),
judge_side as (
    select 'judge' as source, run_id, config,
           count(*)                  as episodes,
           count(*)                  as calls,
           sum(tokens_in)            as tokens_in,
           sum(tokens_out)           as tokens_out,
           sum(runtime_seconds)      as runtime_seconds
    from verdicts
    group by run_id, config
),
final as (
    select * from gate_side
    union all
    select * from judge_side
)
select * from final;
