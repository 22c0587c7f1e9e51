-- The HTML report's matrix (reports/html): one row per scenario x model x prompt x memory mode
-- of run $run_id. k passed of n final trials (incomplete ones counted apart, never in n), the
-- five scores as k/n over the trials where each applied, agent errors and vetoes. An external
-- agent's cells are its own: its name (a file's without the folder) goes before the model.
SELECT scenario_id,
       CASE WHEN agent = 'builtin' THEN model
            ELSE regexp_replace(agent, '^.*[/\\]([^/\\]+[.]py:)', '\1') || ' · ' || model END AS model,
       prompt_id,
       memory_mode,
       any_value(domain) AS domain,
       any_value(scenario_class) AS scenario_class,
       count(*) FILTER (WHERE passed) AS k,
       count(*) FILTER (WHERE status <> 'incomplete') AS n,
       count(*) FILTER (WHERE status = 'incomplete') AS incomplete,
       count(*) FILTER (WHERE status IN ('agent_error', 'limit')) AS agent_errors,
       count(*) FILTER (WHERE vetoed) AS vetoed,
       count(*) FILTER (WHERE score_state = 1) AS state_k,
       count(score_state) AS state_n,
       count(*) FILTER (WHERE score_invalidation = 1) AS invalidation_k,
       count(score_invalidation) AS invalidation_n,
       count(*) FILTER (WHERE score_function = 1) AS function_k,
       count(score_function) AS function_n,
       count(*) FILTER (WHERE score_arguments = 1) AS arguments_k,
       count(score_arguments) AS arguments_n,
       count(*) FILTER (WHERE score_response = 1) AS response_k,
       count(score_response) AS response_n
FROM trials
WHERE run_id = $run_id
GROUP BY ALL
ORDER BY scenario_id, model, prompt_id, memory_mode;
