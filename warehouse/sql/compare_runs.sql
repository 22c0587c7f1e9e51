-- Baseline vs candidate, per scenario x agent x model x prompt x memory mode: k/n in each run and the
-- transition ("3/3 -> 1/3"). n counts final outcomes only (complete, agent_error, limit);
-- incomplete trials (infrastructure failures) are counted apart and never lower a pass rate.
-- change: regressed / improved / same (by pass rate k/n), new or dropped (cell in one run
-- only), unknown (no final outcome in one of the runs), changed (the scenario or the prompt
-- differs between the runs: the rates are not comparable, a person must review). Regressions
-- first.
-- Parameters: $baseline, $candidate (run ids).
WITH cells AS (
    SELECT
        run_id,
        scenario_id,
        agent,
        model,
        prompt_id,
        memory_mode,
        count(*) FILTER (WHERE passed) AS k,
        count(*) FILTER (WHERE status <> 'incomplete') AS n,
        count(*) FILTER (WHERE status = 'incomplete') AS incomplete,
        string_agg(DISTINCT scenario_sha256, ',' ORDER BY scenario_sha256) AS scenario_sha256,
        string_agg(DISTINCT prompt_sha256, ',' ORDER BY prompt_sha256) AS prompt_sha256
    FROM trials
    WHERE run_id IN ($baseline, $candidate)
    GROUP BY ALL
),
b AS (SELECT * FROM cells WHERE run_id = $baseline),
c AS (SELECT * FROM cells WHERE run_id = $candidate),
joined AS (
    SELECT
        coalesce(c.scenario_id, b.scenario_id) AS scenario_id,
        coalesce(c.agent, b.agent) AS agent,
        coalesce(c.model, b.model) AS model,
        coalesce(c.prompt_id, b.prompt_id) AS prompt_id,
        coalesce(c.memory_mode, b.memory_mode) AS memory_mode,
        b.k AS baseline_k,
        b.n AS baseline_n,
        c.k AS candidate_k,
        c.n AS candidate_n,
        coalesce(b.incomplete, 0) AS baseline_incomplete,
        coalesce(c.incomplete, 0) AS candidate_incomplete,
        CASE
            WHEN b.n IS NULL THEN 'new'
            WHEN c.n IS NULL THEN 'dropped'
            WHEN b.scenario_sha256 <> c.scenario_sha256 OR b.prompt_sha256 <> c.prompt_sha256
                THEN 'changed'
            WHEN b.n = 0 OR c.n = 0 THEN 'unknown'
            -- compare k_b/n_b with k_c/n_c without division
            WHEN c.k * b.n < b.k * c.n THEN 'regressed'
            WHEN c.k * b.n > b.k * c.n THEN 'improved'
            ELSE 'same'
        END AS change,
        concat_ws(', ',
            CASE WHEN b.scenario_sha256 <> c.scenario_sha256 THEN 'scenario changed' END,
            CASE WHEN b.prompt_sha256 <> c.prompt_sha256 THEN 'prompt changed' END) AS review
    FROM b
    FULL OUTER JOIN c
        ON b.scenario_id = c.scenario_id AND b.agent = c.agent AND b.model = c.model
        AND b.prompt_id = c.prompt_id AND b.memory_mode = c.memory_mode
)
SELECT
    scenario_id,
    agent,
    model,
    prompt_id,
    memory_mode,
    CASE WHEN baseline_n IS NULL THEN '-' ELSE printf('%d/%d', baseline_k, baseline_n) END
        AS baseline,
    CASE WHEN candidate_n IS NULL THEN '-' ELSE printf('%d/%d', candidate_k, candidate_n) END
        AS candidate,
    baseline || ' -> ' || candidate AS transition,
    change,
    review,
    baseline_k,
    baseline_n,
    candidate_k,
    candidate_n,
    baseline_incomplete,
    candidate_incomplete
FROM joined
ORDER BY
    CASE change WHEN 'regressed' THEN 0 WHEN 'changed' THEN 1 WHEN 'unknown' THEN 2
        WHEN 'dropped' THEN 3 WHEN 'new' THEN 4 WHEN 'improved' THEN 5 ELSE 6 END,
    scenario_id, agent, model, prompt_id, memory_mode;
