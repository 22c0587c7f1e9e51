-- Final trials whose id starts with $prefix (a short id is enough), with their run.
SELECT run_id, trial_id
FROM trials
WHERE trial_id LIKE $prefix || '%'
ORDER BY run_id, trial_id;
