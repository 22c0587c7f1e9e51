-- Run $run_id as a tau2 results file describes it (pipeline.interop.tau2_info): when its first
-- invocation started, and the repeats and grid options of its latest one that recorded them.
SELECT min(started_at) OVER () AS started_at, repeats, config_json
FROM runs
WHERE run_id = $run_id
ORDER BY config_json IS NULL, started_at DESC
LIMIT 1;
