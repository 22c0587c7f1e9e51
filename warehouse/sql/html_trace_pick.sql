-- Which trials of run $run_id the HTML report embeds whole: up to $max_failed trials that did
-- not pass (failed, agent errors, limits, incomplete) and up to $passed_sample passed ones,
-- taken round-robin over the cells (each cell's first repeat, then each cell's second, ...)
-- so that every cell is represented before any cell gets two.
WITH ranked AS (
    SELECT trial_id, scenario_id, model, prompt_id, memory_mode, repeat,
           passed IS NOT TRUE AS failed,
           row_number() OVER (PARTITION BY scenario_id, model, prompt_id, memory_mode,
                              passed IS NOT TRUE ORDER BY repeat, trial_id) AS round
    FROM trials
    WHERE run_id = $run_id
),
picked AS (
    SELECT trial_id, failed,
           row_number() OVER (PARTITION BY failed ORDER BY round, scenario_id, model, prompt_id,
                              memory_mode, repeat, trial_id) AS pick
    FROM ranked
)
SELECT trial_id, failed
FROM picked
WHERE (failed AND pick <= $max_failed) OR (NOT failed AND pick <= $passed_sample)
ORDER BY trial_id;
