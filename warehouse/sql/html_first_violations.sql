-- The HTML report's first-violation distribution: failed final trials of run $run_id by the
-- check that failed first and the turn it failed at (null: no turn recorded), with the steps.
SELECT coalesce(first_violation_check, coalesce(error_kind, 'unknown')) AS check_id,
       first_violation_turn AS turn,
       count(*) AS trials,
       string_agg(DISTINCT CAST(first_violation_step AS VARCHAR), ', '
                  ORDER BY CAST(first_violation_step AS VARCHAR)) AS steps
FROM trials
WHERE run_id = $run_id AND status <> 'incomplete' AND NOT passed
GROUP BY ALL
ORDER BY check_id, turn NULLS LAST;
