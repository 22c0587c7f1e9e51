-- Pass rates of one run ($run_id) and judge ($judge_model) per model under test, in separate
-- columns: without the judge (code), the judge's own, and combined (code AND judge).
SELECT model, rubric_id, rubric_version, count(*) AS trials,
       count(*) FILTER (WHERE code_passed) AS code_passed,
       count(*) FILTER (WHERE judge_verdict = 'pass') AS judge_passed,
       count(*) FILTER (WHERE combined_code_and_judge_passed) AS combined_code_and_judge_passed,
       count(*) FILTER (WHERE judge_verdict IS NULL OR judge_verdict = 'error')
           AS no_judge_verdict,
       count(*) FILTER (WHERE code_passed AND judge_verdict = 'fail') AS judge_rejects_code_pass,
       count(*) FILTER (WHERE NOT code_passed AND judge_verdict = 'pass')
           AS judge_approves_code_fail,
       round(avg(judge_agreement), 3) AS mean_agreement
FROM trial_signals
WHERE run_id = $run_id AND judge_model = $judge_model
GROUP BY ALL
ORDER BY model, rubric_id, rubric_version;
