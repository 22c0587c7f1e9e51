-- The cells that regressed among the runs started since $since (trends.sql): the last passing
-- run, the first failing one, and what recorded input changed between them. Reads across runs
-- (run it with all_runs).
SELECT suite_id, scenario_id, model, prompt_id, memory_mode, runs,
       last_passing_run, last_passing_at, first_failing_run, first_failing_at,
       failing_passed, failing_judged, what_changed, changed
FROM regressions_since($since)
ORDER BY first_failing_at DESC, suite_id, scenario_id, model, prompt_id, memory_mode;
