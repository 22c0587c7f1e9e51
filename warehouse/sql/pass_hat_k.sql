-- pass^k of one run, tau2's estimator: per scenario C(c, k) / C(n, k), where c of the
-- scenario's n final trials passed (incomplete ones, infrastructure failures, left out), then
-- averaged over the scenarios of each model x prompt x memory mode that have n >= 1, for
-- k = 1 .. the smallest such n. C(c, k) / C(n, k) by log-gamma; 0 when c < k.
-- A scenario whose trials are all incomplete (n = 0) is left out of its cell's mean, as tau2
-- leaves out a task whose simulations all ended in infrastructure errors; every row of the cell
-- counts them (scenarios_left_out) and names them (left_out_scenarios, comma-separated, null
-- when none). A cell with every scenario left out has one row: k and pass_hat_k null,
-- scenarios 0.
WITH cells AS (
    SELECT model, prompt_id, memory_mode, scenario_id,
           count(*) FILTER (WHERE status <> 'incomplete') AS n,
           count(*) FILTER (WHERE passed) AS c
    FROM trials
    WHERE run_id = $run_id
    GROUP BY ALL
),
configs AS (
    SELECT model, prompt_id, memory_mode,
           min(n) FILTER (WHERE n >= 1) AS n_min,
           count(*) FILTER (WHERE n = 0) AS scenarios_left_out,
           string_agg(scenario_id, ', ' ORDER BY scenario_id) FILTER (WHERE n = 0)
               AS left_out_scenarios
    FROM cells
    GROUP BY model, prompt_id, memory_mode
),
ks AS (
    SELECT model, prompt_id, memory_mode, unnest(range(1, n_min + 1)) AS k
    FROM configs
    WHERE n_min IS NOT NULL
),
per_scenario AS (
    SELECT model, prompt_id, memory_mode, k, scenario_id,
           CASE WHEN c < k THEN 0.0
                ELSE exp(lgamma(c + 1) - lgamma(c - k + 1) - lgamma(n + 1) + lgamma(n - k + 1))
           END AS p
    FROM ks
    JOIN cells USING (model, prompt_id, memory_mode)
    WHERE n >= 1
),
means AS (
    SELECT model, prompt_id, memory_mode, k, count(*) AS scenarios,
           round(avg(p), 6) AS pass_hat_k
    FROM per_scenario
    GROUP BY ALL
)
SELECT model, prompt_id, memory_mode, k, coalesce(m.scenarios, 0) AS scenarios, m.pass_hat_k,
       g.scenarios_left_out, g.left_out_scenarios
FROM configs AS g
LEFT JOIN means AS m USING (model, prompt_id, memory_mode)
ORDER BY model, prompt_id, memory_mode, k;
