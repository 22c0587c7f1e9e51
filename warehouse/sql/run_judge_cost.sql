-- The judge's cost over one run ($run_id) and judge ($judge_model): the reported sum, how many
-- judgments reported none (then the total is unknown), and how many judgments.
SELECT sum(cost_usd), count(*) FILTER (WHERE cost_usd IS NULL), count(*)
FROM judgments
WHERE run_id = $run_id AND judge_model = $judge_model;
