-- Trials of run $run_id that have a final outcome (a row that is not incomplete: the row the
-- `trials` view would pick, so the raw rows are read with no pick), as the two 64-bit halves of
-- their 32-hex-digit ids, sorted: a resume skips them, and holds them in 16 bytes a trial
-- (pipeline.sweep.done). An id of another form comes whole in `other`.
SELECT DISTINCT
       CASE WHEN ok THEN ('0x' || substr(trial_id, 1, 16))::UBIGINT END AS high,
       CASE WHEN ok THEN ('0x' || substr(trial_id, 17, 16))::UBIGINT END AS low,
       CASE WHEN NOT ok THEN trial_id END AS other
FROM (
    SELECT trial_id, regexp_full_match(trial_id, '[0-9a-f]{32}') AS ok
    FROM trials_all
    WHERE run_id = $run_id AND status <> 'incomplete'
)
ORDER BY high, low;
