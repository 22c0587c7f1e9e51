-- The scenario x memory-mode matrix for one run (seed 000): each cell holds the five scores as
-- k/n over repeats (k = trials scoring 1, n = trials where the score applied). A missing cell
-- (scenario not run in that mode) is absent, never 0; a score that never applied shows '-'.
WITH final AS (
    SELECT * FROM trials WHERE run_id = $run_id AND status <> 'incomplete'
),
cells AS (
    SELECT
        scenario_id,
        agent,
        model,
        memory_mode,
        count(*) AS trials,
        count(*) FILTER (WHERE passed) AS passed,
        count(score_state) FILTER (WHERE score_state = 1) AS state_k,
        count(score_state) AS state_n,
        count(score_invalidation) FILTER (WHERE score_invalidation = 1) AS invalidation_k,
        count(score_invalidation) AS invalidation_n,
        count(score_function) FILTER (WHERE score_function = 1) AS function_k,
        count(score_function) AS function_n,
        count(score_arguments) FILTER (WHERE score_arguments = 1) AS arguments_k,
        count(score_arguments) AS arguments_n,
        count(score_response) FILTER (WHERE score_response = 1) AS response_k,
        count(score_response) AS response_n,
        count(*) FILTER (WHERE vetoed) AS vetoed
    FROM final
    GROUP BY ALL
)
SELECT
    scenario_id,
    agent,
    model,
    memory_mode,
    printf('%d/%d', passed, trials) AS pass,
    CASE WHEN state_n = 0 THEN '-' ELSE printf('%d/%d', state_k, state_n) END AS state,
    CASE WHEN invalidation_n = 0 THEN '-'
         ELSE printf('%d/%d', invalidation_k, invalidation_n) END AS invalidation,
    CASE WHEN function_n = 0 THEN '-' ELSE printf('%d/%d', function_k, function_n) END
        AS "function",
    CASE WHEN arguments_n = 0 THEN '-' ELSE printf('%d/%d', arguments_k, arguments_n) END
        AS arguments,
    CASE WHEN response_n = 0 THEN '-' ELSE printf('%d/%d', response_k, response_n) END
        AS response,
    vetoed
FROM cells
ORDER BY scenario_id, agent, model, memory_mode;
