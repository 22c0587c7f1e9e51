-- Attempts already recorded per trial of run $run_id that has no final outcome yet: what a
-- resume runs again continues their numbering (a final trial is skipped, so it is left out).
SELECT trial_id, max(attempt) AS attempts
FROM attempts
WHERE run_id = $run_id
  AND trial_id NOT IN (
      SELECT trial_id FROM trials_all WHERE run_id = $run_id AND status <> 'incomplete')
GROUP BY trial_id;
