-- The events of the traces the HTML report embeds (run $run_id, trial ids $trial_ids), in
-- dialog order.
SELECT trial_id, seq, turn, step, kind, content, tool_name, tool_call_id, arguments, result,
       intercepted, blocked, tool_error, state_revision, active_state_before,
       active_state_after, finish_reason, input_tokens, output_tokens, latency_ms
FROM events
WHERE run_id = $run_id AND list_contains($trial_ids, trial_id)
ORDER BY trial_id, seq;
