-- The values the viewer's search offers (reports.view): scenarios, models, failed checks and
-- first-violation checks seen in the warehouse, each sorted. Reads across runs.
SELECT 'scenario' AS facet, scenario_id AS value FROM trials GROUP BY scenario_id
UNION ALL
SELECT 'model', model FROM trials GROUP BY model
UNION ALL
SELECT 'first_violation', first_violation_check FROM trials
WHERE first_violation_check IS NOT NULL GROUP BY first_violation_check
UNION ALL
SELECT 'failed_check', check_id FROM checks_all WHERE NOT passed GROUP BY check_id
ORDER BY facet, value;
