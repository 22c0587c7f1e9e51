-- The final trial rows of two runs ($baseline, $candidate) with what a comparison pairs on
-- (scenario id, prompt, memory mode, repeat index; the model when both runs hold the same
-- models) and what it measures (the trial_outcomes view). Usage columns stay null when unknown.
SELECT *
FROM trial_outcomes
WHERE run_id IN ($baseline, $candidate)
ORDER BY run_id, scenario_id, prompt_id, memory_mode, model, repeat;
