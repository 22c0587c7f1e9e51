-- Trials matching the viewer's search (reports.view): each filter is skipped when its
-- parameter is null; $text is looked for (case folded) in the replies (assistant messages)
-- and the tool calls' arguments of the trial's chosen attempt. Reads across runs; at most
-- $limit rows, newest run first. A scenario or a model narrows the trials read before each
-- trial's final row is chosen (trends.sql: cell_trials, the trials view's choice).
WITH chosen AS (
    SELECT run_id, trial_id, attempt_id, scenario_id, model, prompt_id, memory_mode, repeat,
           status, passed, first_violation_check, first_violation_turn,
           CASE WHEN status <> 'complete' THEN status
                WHEN passed THEN 'passed'
                WHEN NOT passed THEN 'failed'
                ELSE 'unknown' END AS outcome,
           started_at
    FROM cell_trials(NULL, CAST($scenario AS VARCHAR), CAST($model AS VARCHAR), NULL, NULL)
    WHERE (CAST($run_id AS VARCHAR) IS NULL OR run_id = $run_id)
      AND (CAST($first_violation AS VARCHAR) IS NULL
           OR first_violation_check = $first_violation)
),
said AS (
    SELECT DISTINCT run_id, trial_id, attempt_id
    FROM events_all
    WHERE CAST($text AS VARCHAR) IS NOT NULL
      AND ((kind = 'assistant_message' AND contains(lower(content), lower($text)))
           OR (kind = 'tool_call' AND contains(lower(arguments), lower($text))))
),
failed AS (
    SELECT DISTINCT run_id, trial_id, attempt_id
    FROM checks_all
    WHERE CAST($failed_check AS VARCHAR) IS NOT NULL AND NOT passed AND check_id = $failed_check
)
SELECT c.run_id, c.trial_id, c.scenario_id, c.model, c.prompt_id, c.memory_mode, c.repeat,
       c.outcome, c.first_violation_check, c.first_violation_turn
FROM chosen AS c
WHERE (CAST($outcome AS VARCHAR) IS NULL OR c.outcome = $outcome)
  AND (CAST($text AS VARCHAR) IS NULL OR EXISTS (
        SELECT 1 FROM said AS s
        WHERE s.run_id = c.run_id AND s.trial_id = c.trial_id AND s.attempt_id = c.attempt_id))
  AND (CAST($failed_check AS VARCHAR) IS NULL OR EXISTS (
        SELECT 1 FROM failed AS f
        WHERE f.run_id = c.run_id AND f.trial_id = c.trial_id AND f.attempt_id = c.attempt_id))
ORDER BY c.started_at DESC, c.run_id, c.scenario_id, c.model, c.memory_mode, c.repeat
LIMIT $limit;
