-- Both signals of one run ($run_id) and one judge ($judge_model), per trial: the code's
-- verdict, the judge's majority and agreement, and the combined score (named as combined).
SELECT scenario_id, model, memory_mode, repeat, left(trial_id, 12) AS trial,
       code_passed, judge_verdict,
       judge_passes || '/' || judge_fails || '/' || judge_errors AS "pass/fail/error",
       round(judge_agreement, 2) AS agreement,
       combined_code_and_judge_passed AS combined
FROM trial_signals
WHERE run_id = $run_id AND judge_model = $judge_model
ORDER BY scenario_id, model, memory_mode, repeat, trial_id;
