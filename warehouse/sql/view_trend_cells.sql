-- The cells of the runs started since $since for the viewer's trends page (reports.view):
-- each cell's class (trends.sql: cell_runs_since) and its runs in order (run id, start,
-- passed, judged). Regressed, then flaky, then failing cells first; at most $limit cells.
SELECT suite_id, scenario_id, model, prompt_id, memory_mode,
       any_value(cell_class) AS cell_class, any_value(window_runs) AS run_count,
       any_value(window_passed) AS passed, any_value(window_judged) AS judged,
       any_value(window_passed) / any_value(window_judged) AS pass_rate,
       list({'run_id': run_id, 'at': run_started_at, 'passed': passed, 'judged': judged}
            ORDER BY position) AS runs
FROM cell_runs_since($since)
GROUP BY suite_id, scenario_id, model, prompt_id, memory_mode
ORDER BY CASE any_value(cell_class) WHEN 'regressed' THEN 0 WHEN 'flaky' THEN 1
                                    WHEN 'failing' THEN 2 ELSE 3 END,
         pass_rate, suite_id, scenario_id, model, prompt_id, memory_mode
LIMIT $limit;
