-- Where dialogs first go wrong: the distribution of first-violation points over repeats, per
-- scenario x model x memory mode, for one run. Passed trials are counted apart.
SELECT
    scenario_id,
    model,
    memory_mode,
    first_violation_check,
    first_violation_turn,
    first_violation_step,
    count(*) AS trials,
    any_value(n_repeats) AS of_repeats
FROM (
    SELECT *, count(*) OVER (PARTITION BY scenario_id, model, memory_mode) AS n_repeats
    FROM trials
    WHERE run_id = $run_id AND status <> 'incomplete'
)
WHERE NOT passed
GROUP BY ALL
ORDER BY scenario_id, model, memory_mode, first_violation_turn NULLS LAST,
         first_violation_step NULLS LAST, trials DESC;
