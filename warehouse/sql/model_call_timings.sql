-- Model calls of one run ($run_id) by memory mode and purpose (planner step or memory update):
-- calls, seconds per call, prompt tokens served from the provider's cache, and the trials' wall
-- time that model calls account for.
WITH calls AS (
    SELECT t.memory_mode,
           CASE e.kind WHEN 'memory_update' THEN 'memory' ELSE 'planner' END AS purpose,
           e.latency_ms, e.input_tokens, e.output_tokens, e.cached_input_tokens
    FROM events AS e
    JOIN trials AS t USING (run_id, trial_id, attempt_id)
    WHERE e.run_id = $run_id AND e.kind IN ('assistant_message', 'memory_update')
),
per_trial AS (
    SELECT t.memory_mode, t.latency_ms AS trial_ms,
           (SELECT sum(e.latency_ms) FROM events AS e
            WHERE e.run_id = t.run_id AND e.trial_id = t.trial_id AND e.attempt_id = t.attempt_id
              AND e.kind IN ('assistant_message', 'memory_update')) AS model_ms
    FROM trials AS t
    WHERE t.run_id = $run_id AND t.status <> 'incomplete'
)
SELECT c.memory_mode, c.purpose,
       count(*) AS calls,
       round(avg(c.latency_ms) / 1000, 1) AS s_per_call,
       round(quantile_cont(c.latency_ms, 0.9) / 1000, 1) AS p90_s,
       round(avg(c.input_tokens)) AS prompt_tokens,
       round(avg(c.output_tokens)) AS output_tokens,
       round(sum(c.cached_input_tokens) / nullif(sum(c.input_tokens)
             FILTER (WHERE c.cached_input_tokens IS NOT NULL), 0), 2) AS cache_hit,
       any_value(p.trial_s) AS s_per_trial,
       any_value(p.model_share) AS model_share
FROM calls AS c
JOIN (SELECT memory_mode, round(avg(trial_ms) / 1000, 1) AS trial_s,
             round(sum(model_ms) / sum(trial_ms), 2) AS model_share
      FROM per_trial GROUP BY memory_mode) AS p USING (memory_mode)
GROUP BY c.memory_mode, c.purpose
ORDER BY c.memory_mode, c.purpose;
