-- 029_delivery_profile: the scoring profile each delivered program was run on GT under (issue 9):
-- 'default' (the seed's 10 s / 128 MiB per execution) or 'evalplus' (EvalPlus 0.3.1's per-input limits
-- and float rule). Rows written before this column existed were all scored under 'default'.
alter table deliveries add column gt_profile varchar default 'default';
