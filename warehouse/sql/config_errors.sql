-- Trials of a run ($run_id) the provider refused as configured (bad key, unknown model...):
-- the first message, with how many trials it stopped.
SELECT any_value(error_message) AS message, count(*) AS trials
FROM trials
WHERE run_id = $run_id AND error_kind = 'config_error'
HAVING count(*) > 0;
