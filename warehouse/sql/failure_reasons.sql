-- Why the trials of a run ($run_id) did not pass, most frequent first: the closed error kind
-- of trials that ended in an error, the first violated check of the others.
SELECT
    CASE WHEN status = 'complete' THEN 'failed' ELSE status END AS outcome,
    coalesce(error_kind, regexp_replace(first_violation_check, '@.*$', '')) AS reason,
    count(*) AS trials,
    count(DISTINCT scenario_id) AS scenarios
FROM trials
WHERE run_id = $run_id AND passed IS DISTINCT FROM true
GROUP BY ALL
ORDER BY trials DESC, reason
LIMIT 8;
