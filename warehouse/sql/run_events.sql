-- The events of one run's final attempts ($run_id), in trial and dialog order.
SELECT *
FROM events
WHERE run_id = $run_id AND ($trial_id IS NULL OR trial_id = $trial_id)
ORDER BY trial_id, seq;
