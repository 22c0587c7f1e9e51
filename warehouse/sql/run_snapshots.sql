-- The database snapshots of one run's final attempts ($run_id), in trial order.
SELECT *
FROM snapshots
WHERE run_id = $run_id AND ($trial_id IS NULL OR trial_id = $trial_id)
ORDER BY trial_id, phase, table_name;
