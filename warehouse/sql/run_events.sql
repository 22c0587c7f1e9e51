-- The events of one run's final attempts ($run_id), in trial and dialog order.
SELECT *
FROM events
WHERE run_id = $run_id
ORDER BY trial_id, seq;
