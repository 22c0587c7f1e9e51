-- The HTML report's header: run $run_id's final trials by status (passed / failed for the
-- complete ones), with the first and last trial times.
SELECT CASE WHEN status = 'complete' AND passed THEN 'passed'
            WHEN status = 'complete' THEN 'failed'
            ELSE status END AS outcome,
       count(*) AS trials,
       min(started_at) AS first_started,
       max(finished_at) AS last_finished
FROM trials
WHERE run_id = $run_id
GROUP BY ALL
ORDER BY outcome;
