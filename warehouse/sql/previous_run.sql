-- The latest run started before $candidate whose id starts with $prefix (e.g. the previous
-- nightly run), or no row. Reads across runs (run it with all_runs).
SELECT run_id
FROM runs
WHERE starts_with(run_id, $prefix) AND run_id <> $candidate
  AND started_at < coalesce(
        (SELECT min(started_at) FROM runs WHERE run_id = $candidate), now())
GROUP BY run_id
ORDER BY max(started_at) DESC
LIMIT 1;
