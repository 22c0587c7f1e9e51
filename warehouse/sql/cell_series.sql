-- One cell's history (trends.sql: cell_history_of) since $since, oldest run first: per run its
-- counts, pass rate and recorded inputs. Reads across runs (all_runs).
SELECT run_id, run_started_at, trials, judged, passed, incomplete, pass_rate, model_version,
       prompt_sha256, scenario, tools_sha256, code_version, generation_params
FROM cell_history_of($since, $suite_id, $scenario_id, $model, $prompt_id, $memory_mode)
ORDER BY run_started_at, run_id;
