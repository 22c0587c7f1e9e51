-- Attempts already recorded per trial of run $run_id (a resume continues their numbering).
SELECT trial_id, max(attempt) AS attempts
FROM attempts
WHERE run_id = $run_id
GROUP BY trial_id;
