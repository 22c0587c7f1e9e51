-- The final trial rows of two runs ($baseline, $candidate) with what a comparison pairs on
-- (scenario id, prompt, memory mode, repeat index; the model when both runs hold the same
-- models) and what it measures. Usage columns stay null when unknown.
SELECT
    run_id,
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
    score_state,
    score_response,
    vetoed,
    first_violation_check,
    first_violation_turn,
    first_violation_step,
    cost_usd,
    input_tokens,
    output_tokens,
    latency_ms,
    tool_calls,
    code_version
FROM trials
WHERE run_id IN ($baseline, $candidate)
ORDER BY run_id, scenario_id, prompt_id, memory_mode, model, repeat;
