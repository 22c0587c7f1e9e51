-- Pass rate as k/n per scenario x agent x model x prompt x memory mode for one run.
-- n counts final outcomes (complete, agent_error, limit); incomplete trials (infrastructure
-- failures that outlasted every retry) are left out of the rate and counted on their own.
-- repeats counts the cell's trials (its repeats, whatever their status); retries counts the
-- attempts beyond one per trial (infrastructure failures run again, earlier invocations too).
WITH tried AS (
    SELECT trial_id, count(*) AS attempts
    FROM attempts
    WHERE run_id = $run_id
    GROUP BY trial_id
)
SELECT
    scenario_id,
    agent,
    model,
    prompt_id,
    memory_mode,
    count(*) FILTER (WHERE passed) AS k,
    count(*) FILTER (WHERE status <> 'incomplete') AS n,
    printf('%d/%d', k, n) AS pass_rate,
    count(*) FILTER (WHERE status IN ('agent_error', 'limit')) AS agent_errors,
    count(*) FILTER (WHERE status = 'incomplete') AS incomplete,
    count(*) AS repeats,
    greatest(coalesce(sum(tried.attempts), 0) - count(*), 0) AS retries
FROM trials
LEFT JOIN tried USING (trial_id)
WHERE run_id = $run_id
GROUP BY ALL
ORDER BY scenario_id, agent, model, prompt_id, memory_mode;
