-- 075_gate_gauge: whether a gate run used only suites with a passing gauge record ('checked': the
-- reference passes and every known wrong sample is blocked, for each task's visible and hidden suite)
-- or skipped the check ('skipped': `gate --no-gauge`, or the service's tasks, which carry no
-- reference). Runs written before the check existed were not gauged.
alter table gate_runs add column gauge varchar default 'skipped';
