-- The HTML report's header: the prompts and suites run $run_id used, each with its content
-- hash(es) and how many trials and scenarios ran with it. `what` is prompt or suite.
SELECT 'prompt' AS what, prompt_id AS name,
       string_agg(DISTINCT prompt_sha256, ', ' ORDER BY prompt_sha256) AS sha256,
       count(DISTINCT scenario_id) AS scenarios, count(*) AS trials
FROM trials
WHERE run_id = $run_id
GROUP BY prompt_id
UNION ALL
SELECT 'suite' AS what, suite_id AS name,
       string_agg(DISTINCT suite_sha256, ', ' ORDER BY suite_sha256) AS sha256,
       count(DISTINCT scenario_id) AS scenarios, count(*) AS trials
FROM trials
WHERE run_id = $run_id
GROUP BY suite_id
ORDER BY what, name;
