-- The cells that were flaky among the runs started since $since (trends.sql): a pass rate
-- between 0 and 1 over the window that is not one clean break. Reads across runs (all_runs).
SELECT suite_id, scenario_id, model, prompt_id, memory_mode, runs, passed, judged, pass_rate
FROM cell_window($since)
WHERE cell_class = 'flaky'
ORDER BY pass_rate, suite_id, scenario_id, model, prompt_id, memory_mode;
