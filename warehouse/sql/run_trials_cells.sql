-- The final trial rows of one run ($run_id) for a per-cell report (JUnit XML): the cell
-- (scenario x model x prompt x memory mode), the outcome and the versions.
SELECT
    trial_id,
    scenario_id,
    scenario_version,
    scenario_sha256,
    suite_id,
    model,
    model_version,
    prompt_id,
    prompt_sha256,
    memory_mode,
    repeat,
    status,
    passed,
    error_kind,
    error_message,
    first_violation_check,
    first_violation_turn,
    first_violation_step,
    latency_ms,
    code_version
FROM trials
WHERE run_id = $run_id
ORDER BY scenario_id, model, prompt_id, memory_mode, repeat;
