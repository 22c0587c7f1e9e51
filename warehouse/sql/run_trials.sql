-- The final trial rows of one run ($run_id), in trial order.
SELECT *
FROM trials
WHERE run_id = $run_id AND ($trial_id IS NULL OR trial_id = $trial_id)
ORDER BY trial_id;
