-- Pass rate as k/n per scenario x model x prompt x memory mode for one run.
-- n counts final outcomes (complete, agent_error, limit); incomplete trials (infrastructure
-- failures) are left out of the rate and counted on their own.
SELECT
    scenario_id,
    model,
    prompt_id,
    memory_mode,
    count(*) FILTER (WHERE passed) AS k,
    count(*) FILTER (WHERE status <> 'incomplete') AS n,
    printf('%d/%d', k, n) AS pass_rate,
    count(*) FILTER (WHERE status IN ('agent_error', 'limit')) AS agent_errors,
    count(*) FILTER (WHERE status = 'incomplete') AS incomplete
FROM trials
WHERE run_id = $run_id
GROUP BY ALL
ORDER BY scenario_id, model, prompt_id, memory_mode;
