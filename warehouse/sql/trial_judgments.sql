-- Every judge's majority verdict on one trial ($run_id, $trial_id), with its first reason.
SELECT judge_model, rubric_id, rubric_version, judge_verdict, passes, fails, errors,
       reasons[1]
FROM judge_verdicts
WHERE run_id = $run_id AND trial_id = $trial_id
ORDER BY judge_model, rubric_id, rubric_version;
