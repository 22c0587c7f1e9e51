-- tau2-bench's combined reward (docs/tau2.md): its own named column, `tau2_reward`, beside
-- trials.passed and never in it. One row per trial of a scenario with a reward_basis (final
-- attempts, incomplete ones left out) and per NL-assertions judge (judge model x rubric of id
-- `nl_assertions`) that judged its run; one row with no judge when none did.
--
-- tau2_reward is the product of the components the scenario's reward_basis names, each 1 or 0:
--   database      the database_state checks (database:tables) all passed; null when none
--   communicate   the communicate check passed (1 when the scenario has no facts)
--   action        the action check passed (1 when the task has no gold actions)
--   nl_assertion  the judge's majority verdict (1 when the task has no NL assertions; null
--                 when a needed verdict is missing: no judge, an error, or no majority)
-- and 0 whatever the components when the dialog did not end normally (status not complete).
-- A component's reward when the basis names it, else 1 (it does not count).
CREATE OR REPLACE MACRO _in_basis(basis, component, reward) AS
    CASE WHEN list_contains(basis, component) THEN reward ELSE 1 END;

CREATE OR REPLACE VIEW tau2_rewards AS
WITH scored AS (
    SELECT t.run_id, t.trial_id, t.attempt_id, t.scenario_id, t.model, t.prompt_id,
           t.memory_mode, t.repeat, t.status, t.passed, t.reward_basis, t.nl_assertions,
           bool_and(c.passed) FILTER (WHERE c.check_kind = 'database_state') AS database_ok,
           bool_and(c.passed) FILTER (WHERE c.check_kind = 'communicate') AS communicate_ok,
           bool_and(c.passed) FILTER (WHERE c.check_kind = 'action') AS action_ok
    FROM trials AS t
    LEFT JOIN checks AS c USING (run_id, trial_id, attempt_id)
    WHERE t.reward_basis IS NOT NULL AND t.status <> 'incomplete'
    GROUP BY ALL
),
nl_judges AS (
    SELECT DISTINCT run_id, judge_model, rubric_id, rubric_version, rubric_sha256
    FROM judge_verdicts
    WHERE rubric_id = 'nl_assertions'
),
components AS (
    SELECT s.*, j.judge_model, j.rubric_version, j.rubric_sha256, v.judge_verdict,
           CASE WHEN database_ok IS NULL THEN NULL WHEN database_ok THEN 1 ELSE 0 END
               AS database_reward,
           CASE WHEN communicate_ok IS NULL OR communicate_ok THEN 1 ELSE 0 END
               AS communicate_reward,
           CASE WHEN action_ok IS NULL OR action_ok THEN 1 ELSE 0 END AS action_reward,
           CASE WHEN s.nl_assertions IS NULL THEN 1
                WHEN v.judge_verdict = 'pass' THEN 1
                WHEN v.judge_verdict = 'fail' THEN 0 END AS nl_assertion_reward
    FROM scored AS s
    LEFT JOIN nl_judges AS j USING (run_id)
    LEFT JOIN judge_verdicts AS v
        ON v.run_id = s.run_id AND v.trial_id = s.trial_id AND v.attempt_id = s.attempt_id
       AND v.judge_model = j.judge_model AND v.rubric_id = j.rubric_id
       AND v.rubric_version = j.rubric_version AND v.rubric_sha256 = j.rubric_sha256
)
SELECT run_id, trial_id, scenario_id, model, prompt_id, memory_mode, repeat, status,
       passed AS code_passed, reward_basis, nl_assertions, judge_model,
       rubric_version, rubric_sha256, judge_verdict,
       database_reward, communicate_reward, action_reward, nl_assertion_reward,
       CASE WHEN status <> 'complete' THEN 0
            ELSE _in_basis(reward_basis, 'database', database_reward)
               * _in_basis(reward_basis, 'communicate', communicate_reward)
               * _in_basis(reward_basis, 'action', action_reward)
               * _in_basis(reward_basis, 'nl_assertion', nl_assertion_reward)
       END AS tau2_reward
FROM components;
