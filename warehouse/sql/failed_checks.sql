-- The failed checks (rule codes) of run $run_id's final attempts, in the order they failed.
SELECT trial_id, check_id, turn, step, detail
FROM checks
WHERE run_id = $run_id AND NOT passed
ORDER BY trial_id, turn NULLS LAST, step NULLS LAST, check_id;
