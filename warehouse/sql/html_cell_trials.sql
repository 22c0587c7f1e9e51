-- The HTML report's trial lists: every final trial of run $run_id, light (no events), in cell
-- and repeat order; a cell of the matrix lists these.
SELECT scenario_id,
       CASE WHEN agent = 'builtin' THEN model
            ELSE regexp_replace(agent, '^.*[/\\]([^/\\]+[.]py:)', '\1') || ' · ' || model END AS model,
       prompt_id, memory_mode, repeat, trial_id, status, passed,
       error_kind, first_violation_check, first_violation_turn, first_violation_step
FROM trials
WHERE run_id = $run_id
ORDER BY scenario_id, model, prompt_id, memory_mode, repeat, trial_id;
