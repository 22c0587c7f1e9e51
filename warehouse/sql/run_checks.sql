-- The check rows of one run's final attempts ($run_id), in trial order.
SELECT *
FROM checks
WHERE run_id = $run_id
ORDER BY trial_id;
