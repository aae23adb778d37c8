-- 089_v4v_rounds: seed 002's reading of repeated rounds and of false rejections (issue 22). A decision
-- copied from round 0 into a later round (the candidate was not re-run) is marked and counted, and the
-- median-BA round is chosen on the candidates decided afresh in every round; round_ba then holds that
-- ranking's BA per round (median_round_basis says so). False rejections are valid FAILs on legal
-- candidates; those on tasks where the verifier rejects everything are counted apart.
alter table v4v_task_metrics add column legal_rejected integer;        -- null in runs before 089
alter table v4v_task_metrics add column copied_decisions integer;      -- decisions copied from round 0
alter table v4v_verifier_summary add column copied_decisions integer;  -- in the reported round
alter table v4v_verifier_summary add column median_round_basis varchar;
alter table v4v_verifier_summary add column false_rejections integer;
alter table v4v_verifier_summary add column all_reject_false_rejections integer;
alter table v4v_verifier_summary add column all_reject_share double;   -- all_reject_false_rejections / false_rejections
