-- The judgments of one run's final attempts ($run_id), in trial, judge, rubric, repeat order.
SELECT *
FROM judgments
WHERE run_id = $run_id
ORDER BY trial_id, judge_model, rubric_id, rubric_version, rubric_sha256, repeat;
