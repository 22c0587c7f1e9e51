-- The HTML report's usage table: per model of run $run_id, over its final trials, cost, tokens,
-- latency and calls. A figure any trial did not report is null (unknown), never a partial sum
-- or 0.
SELECT model,
       count(*) AS trials,
       CASE WHEN count(cost_usd) = count(*) THEN sum(cost_usd) END AS cost_usd_total,
       CASE WHEN count(cost_usd) = count(*) THEN avg(cost_usd) END AS cost_usd_per_trial,
       CASE WHEN count(input_tokens) = count(*) THEN avg(input_tokens) END
           AS input_tokens_per_trial,
       CASE WHEN count(output_tokens) = count(*) THEN avg(output_tokens) END
           AS output_tokens_per_trial,
       CASE WHEN count(latency_ms) = count(*) THEN quantile_cont(latency_ms, 0.5) END
           AS latency_ms_p50,
       CASE WHEN count(latency_ms) = count(*) THEN quantile_cont(latency_ms, 0.95) END
           AS latency_ms_p95,
       avg(model_calls) AS model_calls_per_trial,
       avg(tool_calls) AS tool_calls_per_trial
FROM trials
WHERE run_id = $run_id AND status <> 'incomplete'
GROUP BY model
ORDER BY model;
