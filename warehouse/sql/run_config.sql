-- The grid options ($run_id's latest invocation that recorded them), for --resume.
SELECT config_json
FROM runs
WHERE run_id = $run_id AND config_json IS NOT NULL
ORDER BY started_at DESC
LIMIT 1;
