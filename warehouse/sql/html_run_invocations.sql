-- The HTML report's header (reports/html): every invocation of run $run_id, oldest first, with
-- what it ran and which code ran it.
SELECT invocation_id, started_at, finished_at, code_version, suite_ids, suite_sha256s, models,
       memory_modes, repeats, grid_size, trials_run, argv
FROM runs
WHERE run_id = $run_id
ORDER BY started_at, invocation_id;
