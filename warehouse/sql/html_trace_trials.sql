-- The trial rows of the traces the HTML report embeds (run $run_id, trial ids $trial_ids).
SELECT trial_id, scenario_id, scenario_version, model, model_version, prompt_id, memory_mode,
       repeat, seed, status, passed, error_kind, error_message, score_state, score_invalidation,
       score_function, score_arguments, score_response, vetoed, first_violation_check,
       first_violation_turn, first_violation_step, failure_origin, turns, model_calls,
       tool_calls, input_tokens, output_tokens, cost_usd, latency_ms, started_at
FROM trials
WHERE run_id = $run_id AND list_contains($trial_ids, trial_id)
ORDER BY trial_id;
