-- The final trial rows of one run ($run_id) for a per-cell report (JUnit XML): the cell
-- (scenario x model x prompt x memory mode), the outcome and the versions (trial_outcomes).
SELECT * EXCLUDE (run_id)
FROM trial_outcomes
WHERE run_id = $run_id
ORDER BY scenario_id, model, prompt_id, memory_mode, repeat;
