-- Every execution attempt of the traces the HTML report embeds (run $run_id, trial ids
-- $trial_ids): the attempt history, retries included.
SELECT trial_id, attempt, outcome, error_kind, message, node_id, started_at, finished_at,
       retry_delay_s
FROM attempts
WHERE run_id = $run_id AND list_contains($trial_ids, trial_id)
ORDER BY trial_id, attempt;
