-- The judges' verdicts on the traces the HTML report embeds (run $run_id, trial ids
-- $trial_ids): per judge and rubric the majority verdict, the counts over its repeats and the
-- first reason - shown beside the code checks, never instead of them.
SELECT trial_id, judge_model, rubric_id, rubric_version, judge_verdict, repeats, passes, fails,
       errors, reasons[1] AS reason
FROM judge_verdicts
WHERE run_id = $run_id AND list_contains($trial_ids, trial_id)
ORDER BY trial_id, judge_model, rubric_id, rubric_version;
