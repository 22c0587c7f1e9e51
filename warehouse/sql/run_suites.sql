-- The suites whose scenarios runs $baseline and $candidate ran (to look up critical scenarios).
SELECT DISTINCT suite_id
FROM trials
WHERE run_id IN ($baseline, $candidate)
ORDER BY suite_id;
