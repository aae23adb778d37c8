-- 094_experiment_basis: whether an experiment row measures its quantity on data ('measured': it could
-- have come out otherwise) or shows what is true by construction ('demonstration': the seed's own counts
-- run through the arithmetic, a baseline's definition, a suite built to behave so). Rows written before
-- this column were all printed as measured.
alter table experiment_rows add column basis varchar default 'measured';
