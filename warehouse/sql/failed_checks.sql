-- The failed checks (rule codes) of run $run_id's final attempts, in the order they failed.
-- A check that does not count toward passed (checks.counted = false: a recorded signal, such
-- as tau2's action check outside the reward basis) is no rule code.
SELECT trial_id, check_id, turn, step, detail
FROM checks
WHERE run_id = $run_id AND NOT passed AND counted IS DISTINCT FROM false
ORDER BY trial_id, turn NULLS LAST, step NULLS LAST, check_id;
