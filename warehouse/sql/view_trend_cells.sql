-- The cells of the runs started since $since for the viewer's trends page (reports.view):
-- each cell's class (trends.sql: cell_window) and its runs in order (run id, start, passed,
-- judged). Regressed, then flaky, then failing cells first; at most $limit cells.
WITH cells AS (
    SELECT * FROM cell_window($since)
),
series AS (
    SELECT suite_id, scenario_id, model, prompt_id, memory_mode,
           list({'run_id': run_id, 'at': run_started_at, 'passed': passed, 'judged': judged}
                ORDER BY run_started_at, run_id) AS runs
    FROM cell_runs_since($since)
    GROUP BY suite_id, scenario_id, model, prompt_id, memory_mode
)
SELECT c.suite_id, c.scenario_id, c.model, c.prompt_id, c.memory_mode, c.cell_class,
       c.runs AS run_count, c.passed, c.judged, c.pass_rate, s.runs
FROM cells AS c
JOIN series AS s USING (suite_id, scenario_id, model, prompt_id, memory_mode)
ORDER BY CASE c.cell_class WHEN 'regressed' THEN 0 WHEN 'flaky' THEN 1 WHEN 'failing' THEN 2
              ELSE 3 END, c.pass_rate, c.suite_id, c.scenario_id, c.model, c.prompt_id,
         c.memory_mode
LIMIT $limit;
