-- The decision column of one run's failure map (condition_decisions.sql).
SELECT *
FROM condition_decisions
WHERE run_id = $run_id
ORDER BY model, memory_mode, prompt_id, condition_type, condition_id;
