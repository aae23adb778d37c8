-- 088_judge_warnings: F.2 exactly as seed 004 writes it (issue 22). Rules F.2's schema does not state
-- (confidence in [0, 1], degree <> 'none' exactly when kind = 'evidence', a non-empty beyond_minimal,
-- non-empty evidence source/quote) no longer make an output invalid; the ones a valid output breaks are
-- stored here, beside the verdict.
alter table judge_verdicts add column warnings varchar not null default '[]';  -- JSON list of messages
