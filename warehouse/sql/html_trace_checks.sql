-- The check rows of the traces the HTML report embeds (run $run_id, trial ids $trial_ids):
-- failed checks first, then by turn and step.
SELECT trial_id, check_id, check_kind, score, passed, turn, step, detail, check_version,
       counted
FROM checks
WHERE run_id = $run_id AND list_contains($trial_ids, trial_id)
ORDER BY trial_id, passed, turn NULLS LAST, step NULLS LAST, check_id;
