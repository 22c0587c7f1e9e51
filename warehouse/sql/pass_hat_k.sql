-- pass^k of one run, tau2's estimator: per scenario C(c, k) / C(n, k), where c of the
-- scenario's n final trials passed (incomplete ones, infrastructure failures, left out), then
-- averaged over the scenarios of each model x prompt x memory mode, for k = 1 .. the smallest
-- n of the cell. C(c, k) / C(n, k) by log-gamma; 0 when c < k.
WITH cells AS (
    SELECT model, prompt_id, memory_mode, scenario_id,
           count(*) FILTER (WHERE status <> 'incomplete') AS n,
           count(*) FILTER (WHERE passed) AS c
    FROM trials
    WHERE run_id = $run_id
    GROUP BY ALL
),
smallest AS (
    SELECT model, prompt_id, memory_mode, min(n) AS n_min
    FROM cells
    GROUP BY model, prompt_id, memory_mode
    HAVING min(n) >= 1
),
ks AS (
    SELECT model, prompt_id, memory_mode, unnest(range(1, n_min + 1)) AS k
    FROM smallest
),
per_scenario AS (
    SELECT model, prompt_id, memory_mode, k, scenario_id,
           CASE WHEN c < k THEN 0.0
                ELSE exp(lgamma(c + 1) - lgamma(c - k + 1) - lgamma(n + 1) + lgamma(n - k + 1))
           END AS p
    FROM ks
    JOIN cells USING (model, prompt_id, memory_mode)
)
SELECT model, prompt_id, memory_mode, k, count(*) AS scenarios,
       round(avg(p), 6) AS pass_hat_k
FROM per_scenario
GROUP BY ALL
ORDER BY model, prompt_id, memory_mode, k;
