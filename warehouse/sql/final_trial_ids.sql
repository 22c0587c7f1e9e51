-- Trials of run $run_id that already have a final outcome (anything but incomplete): a resume
-- skips them.
SELECT DISTINCT trial_id
FROM trials
WHERE run_id = $run_id AND status <> 'incomplete';
