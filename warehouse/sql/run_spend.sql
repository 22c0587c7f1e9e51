-- What run $run_id has spent, trial row by trial row (incomplete attempts that reached the
-- warehouse too: they were paid): a resumed spend cap starts from it.
SELECT model, model_calls, cost_usd, input_tokens, output_tokens,
       user_model, user_model_calls, user_cost_usd, user_input_tokens, user_output_tokens
FROM trials_all
WHERE run_id = $run_id;
