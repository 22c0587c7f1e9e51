-- The LLM judge (seed 004; docs/judge.md): a separate signal beside the code checks. Nothing
-- here changes trials.passed; the judge's verdict and the combined score have their own columns.

-- Judgments of each trial's chosen attempt; the latest `judge run` of a (judge model,
-- rubric) over a trial supersedes earlier ones, all their repeats.
CREATE OR REPLACE VIEW judgments AS
SELECT j.*
FROM judgments_all AS j
SEMI JOIN trials AS t USING (run_id, trial_id, attempt_id)
QUALIFY judgment_id = first_value(judgment_id) OVER (
    PARTITION BY run_id, trial_id, attempt_id, judge_model, rubric_id, rubric_version,
                 rubric_sha256
    ORDER BY judged_at DESC, judgment_id DESC
);

-- One row per (trial, judge model, rubric): the repeats' verdicts, the majority verdict (the
-- verdict more than half of the repeats gave; null when none has a majority) and the
-- agreement across repeats (the share of repeats that gave the most common verdict).
CREATE OR REPLACE VIEW judge_verdicts AS
WITH counted AS (
    SELECT run_id, trial_id, attempt_id, judge_model, rubric_id, rubric_version, rubric_sha256,
           count(*) AS repeats,
           count(*) FILTER (WHERE verdict = 'pass') AS passes,
           count(*) FILTER (WHERE verdict = 'fail') AS fails,
           count(*) FILTER (WHERE verdict = 'error') AS errors,
           list(reason ORDER BY repeat) AS reasons,
           sum(cost_usd) AS cost_usd,
           count(*) FILTER (WHERE cost_usd IS NULL) AS unknown_costs
    FROM judgments
    GROUP BY ALL
)
SELECT * EXCLUDE (unknown_costs, cost_usd),
       CASE WHEN passes * 2 > repeats THEN 'pass'
            WHEN fails * 2 > repeats THEN 'fail'
            WHEN errors * 2 > repeats THEN 'error' END AS judge_verdict,
       greatest(passes, fails, errors) / repeats AS agreement,
       greatest(passes, fails, errors) = repeats AS unanimous,
       CASE WHEN unknown_costs = 0 THEN cost_usd END AS judge_cost_usd
FROM counted;

-- Both signals side by side, per trial and judge: the code's verdict (trials.passed, decided
-- by the checks alone), the judge's majority verdict and agreement, and the seed's combined
-- score (code AND judge), named as combined.
CREATE OR REPLACE VIEW trial_signals AS
SELECT t.run_id, t.trial_id, t.scenario_id, t.model, t.prompt_id, t.memory_mode, t.repeat,
       t.passed AS code_passed, t.first_violation_check,
       v.judge_model, v.rubric_id, v.rubric_version, v.rubric_sha256,
       v.judge_verdict, v.passes AS judge_passes, v.fails AS judge_fails,
       v.errors AS judge_errors, v.repeats AS judge_repeats, v.agreement AS judge_agreement,
       v.reasons AS judge_reasons,
       CASE WHEN v.judge_verdict = 'error' OR v.judge_verdict IS NULL THEN NULL
            ELSE t.passed AND v.judge_verdict = 'pass' END AS combined_code_and_judge_passed,
       v.judge_cost_usd
FROM trials AS t
JOIN judge_verdicts AS v USING (run_id, trial_id, attempt_id)
WHERE t.status <> 'incomplete';

-- Pass rates without and with the judge, in separate columns, per run, scenario, model and
-- judge: the code's (trials.passed), the judge's (its majority verdict), and the combined
-- one (code AND judge; trials without a judge majority verdict are left out of it).
CREATE OR REPLACE VIEW judge_pass_rates AS
SELECT run_id, scenario_id, model, judge_model, rubric_id, rubric_version,
       count(*) AS trials,
       avg(CASE WHEN code_passed THEN 1.0 ELSE 0.0 END) AS code_pass_rate,
       avg(CASE WHEN judge_verdict IS NULL OR judge_verdict = 'error' THEN NULL
                WHEN judge_verdict = 'pass' THEN 1.0 ELSE 0.0 END) AS judge_pass_rate,
       avg(CASE WHEN combined_code_and_judge_passed IS NULL THEN NULL
                WHEN combined_code_and_judge_passed THEN 1.0 ELSE 0.0 END)
           AS combined_code_and_judge_pass_rate,
       count(*) FILTER (WHERE judge_verdict IS NULL OR judge_verdict = 'error')
           AS trials_without_judge_verdict,
       avg(judge_agreement) AS mean_judge_agreement,
       count(*) FILTER (WHERE code_passed AND judge_verdict = 'fail') AS judge_rejects_code_pass,
       count(*) FILTER (WHERE NOT code_passed AND judge_verdict = 'pass')
           AS judge_approves_code_fail
FROM trial_signals
GROUP BY ALL;
