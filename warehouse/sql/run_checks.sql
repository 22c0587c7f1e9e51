-- The check rows of one run's final attempts ($run_id), in trial order.
SELECT *
FROM checks
WHERE run_id = $run_id AND ($trial_id IS NULL OR trial_id = $trial_id)
ORDER BY trial_id;
