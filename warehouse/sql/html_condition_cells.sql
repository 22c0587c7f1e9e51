-- Which trials make each cell of run $run_id's failure map (failure_map.sql): a format
-- column's cell lists the forbidden task's trials in that format, the repeat column the plain
-- trials whose bare repeat was played; final trials only, as the map counts them.
SELECT t.model, t.memory_mode, t.prompt_id, c.condition_id, c.format AS map_column,
       c.trial_id, t.repeat, c.outcome, c.report
FROM condition_trials AS c
JOIN trials AS t USING (run_id, trial_id, attempt_id)
WHERE c.run_id = $run_id AND t.status <> 'incomplete' AND c.role = 'forbidden'
UNION ALL
SELECT t.model, t.memory_mode, t.prompt_id, c.condition_id, 'repeat' AS map_column,
       c.trial_id, t.repeat, c.repeat_outcome AS outcome, c.repeat_report AS report
FROM condition_trials AS c
JOIN trials AS t USING (run_id, trial_id, attempt_id)
WHERE c.run_id = $run_id AND t.status <> 'incomplete' AND c.role = 'forbidden'
      AND c.format = 'plain' AND c.repeat_played
ORDER BY model, memory_mode, prompt_id, condition_id, map_column, repeat, trial_id;
