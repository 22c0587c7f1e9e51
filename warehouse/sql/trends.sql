-- Trends across runs (a nightly series, or any runs sharing a suite), created by
-- warehouse.query after the other view files, on a connection whose SQL names one of them
-- (warehouse.view_plan). A cell is scenario x model x prompt x memory mode (within
-- its suite); a run of the cell passes when every trial with a verdict passed (an agent error
-- or a limit counts against the agent; an incomplete trial, or a verdict left unknown by a
-- check that raised, counts neither way). Runs are ordered by when they started.

-- The recorded value of one input over a cell's trials in a run, as one text ('not recorded'
-- for a null; 'least … greatest' when its trials differ): equal texts mean nothing recorded
-- changed. (min and max, not a list of distinct values: this runs once per cell per run.)
CREATE OR REPLACE MACRO recorded_values(value) AS
    CASE WHEN min(coalesce(CAST(value AS VARCHAR), 'not recorded'))
              = max(coalesce(CAST(value AS VARCHAR), 'not recorded'))
         THEN min(coalesce(CAST(value AS VARCHAR), 'not recorded'))
         ELSE min(coalesce(CAST(value AS VARCHAR), 'not recorded')) || ' … '
              || max(coalesce(CAST(value AS VARCHAR), 'not recorded')) END;

-- The final row of each trial of one cell (each of ``suite`` ... ``mode`` null: of every
-- cell), chosen as the ``trials`` view chooses (views.sql) but after the cell's filter: every
-- row of a trial has its trial's cell, so one cell's history reads that cell's rows only, not
-- every trial of the warehouse. Runs whose files compaction marked chosen need no pick.
CREATE OR REPLACE MACRO cell_trials(suite, scenario, mdl, prompt, mode) AS TABLE
SELECT *
FROM trials_chosen
WHERE (suite IS NULL OR suite_id = suite) AND (scenario IS NULL OR scenario_id = scenario)
  AND (mdl IS NULL OR model = mdl) AND (prompt IS NULL OR prompt_id = prompt)
  AND (mode IS NULL OR memory_mode = mode)
UNION ALL BY NAME
(
    SELECT *
    FROM trials_rest
    WHERE (suite IS NULL OR suite_id = suite) AND (scenario IS NULL OR scenario_id = scenario)
      AND (mdl IS NULL OR model = mdl) AND (prompt IS NULL OR prompt_id = prompt)
      AND (mode IS NULL OR memory_mode = mode)
    QUALIFY row_number() OVER (
        PARTITION BY run_id, trial_id
        ORDER BY (status = 'incomplete'), finished_at DESC, attempt_id
    ) = 1
);

-- One row per cell (one cell, or every cell: cell_trials) per run started since ``since``: its
-- outcome counts, pass rate and every recorded input of its trials (the model's reported
-- version, the prompt, scenario and tool-schema hashes, the suite hash, the code version, the
-- generation parameters). A run started when its first invocation did, else (a run written
-- without a runs row) when its first trial did.
CREATE OR REPLACE MACRO cell_history_of(since, suite, scenario, mdl, prompt, mode) AS TABLE
SELECT t.suite_id, t.scenario_id, t.model, t.prompt_id, t.memory_mode, t.run_id,
       coalesce(any_value(s.started_at), min(t.started_at)) AS run_started_at,
       count(*) AS trials,
       count(*) FILTER (WHERE t.status <> 'incomplete'
                        AND (t.status <> 'complete' OR t.passed IS NOT NULL)) AS judged,
       count(*) FILTER (WHERE t.passed) AS passed,
       count(*) FILTER (WHERE t.status = 'incomplete') AS incomplete,
       CAST(count(*) FILTER (WHERE t.passed) AS DOUBLE)
           / nullif(count(*) FILTER (WHERE t.status <> 'incomplete'
                                     AND (t.status <> 'complete' OR t.passed IS NOT NULL)),
                    0) AS pass_rate,
       recorded_values(t.model_version) AS model_version,
       recorded_values(t.system_fingerprint) AS system_fingerprint,
       recorded_values(t.prompt_sha256) AS prompt_sha256,
       recorded_values('v' || t.scenario_version || ' ' || t.scenario_sha256) AS scenario,
       recorded_values(t.tools_sha256) AS tools_sha256,
       recorded_values(t.suite_sha256) AS suite_sha256,
       recorded_values(t.code_version) AS code_version,
       recorded_values(t.temperature) AS temperature,
       recorded_values(t.generation_params) AS generation_params,
       recorded_values(t.user_model) AS user_model
FROM cell_trials(suite, scenario, mdl, prompt, mode) AS t
LEFT JOIN (SELECT run_id, min(started_at) AS started_at FROM runs_all GROUP BY run_id) AS s
    USING (run_id)
WHERE coalesce(s.started_at, t.started_at) >= since
GROUP BY t.suite_id, t.scenario_id, t.model, t.prompt_id, t.memory_mode, t.run_id;

-- Every cell since ``since``; and over every run.
CREATE OR REPLACE MACRO cell_history_since(since) AS TABLE
SELECT * FROM cell_history_of(since, NULL, NULL, NULL, NULL, NULL);

CREATE OR REPLACE VIEW cell_history AS
SELECT * FROM cell_history_since(TIMESTAMPTZ '-infinity');

-- A cell's runs since ``since`` that have a verdict, in order: each with whether it passed, its
-- position, and over the whole window the cell's counts, the position of its last passing run
-- and its class, one of passing (every run passed), failing (no trial passed), regressed (it
-- passed in every run up to its last passing one and failed in every run since), flaky (any
-- other mix: a pass rate between 0 and 1 over the window). One pass over the history: the
-- macros below read it through this one (each view binds its scans when created).
CREATE OR REPLACE MACRO cell_runs_since(since) AS TABLE
WITH judged AS (
    SELECT *, pass_rate = 1 AS passing
    FROM cell_history_since(since)
    WHERE judged > 0
),
ordered AS (
    SELECT *,
           row_number() OVER cell AS position,
           max(CASE WHEN passing THEN 1 ELSE 0 END) OVER rest = 0 AS failing_since,
           bool_and(passing) OVER upto AS passing_so_far
    FROM judged
    WINDOW cell AS (PARTITION BY suite_id, scenario_id, model, prompt_id, memory_mode
                    ORDER BY run_started_at, run_id),
           rest AS (cell ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING),
           upto AS (cell ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
),
whole AS (
    SELECT *,
           count(*) OVER whole AS window_runs,
           sum(judged) OVER whole AS window_judged,
           sum(passed) OVER whole AS window_passed,
           max(CASE WHEN passing THEN position END) OVER whole AS last_passing,
           bool_and(passing) OVER whole AS always_passing,
           bool_and(passing_so_far OR failing_since) OVER whole AS clean_break
    FROM ordered
    WINDOW whole AS (PARTITION BY suite_id, scenario_id, model, prompt_id, memory_mode)
)
SELECT *,
       CASE WHEN always_passing THEN 'passing'
            WHEN window_passed = 0 THEN 'failing'
            WHEN last_passing IS NOT NULL AND clean_break THEN 'regressed'
            ELSE 'flaky' END AS cell_class
FROM whole;

-- Each cell over the runs since ``since``: its counts, pass rate and class.
CREATE OR REPLACE MACRO cell_window(since) AS TABLE
SELECT suite_id, scenario_id, model, prompt_id, memory_mode,
       any_value(window_runs) AS runs, any_value(window_judged) AS judged,
       any_value(window_passed) AS passed,
       any_value(window_passed) / any_value(window_judged) AS pass_rate,
       min(run_started_at) AS first_run_at, max(run_started_at) AS last_run_at,
       any_value(cell_class) AS cell_class, any_value(last_passing) AS last_passing
FROM cell_runs_since(since)
GROUP BY suite_id, scenario_id, model, prompt_id, memory_mode;

-- Each regressed cell since ``since``: its last passing run, its first failing run, and what
-- changed between them among the recorded inputs (``changed``: input, before, after), or
-- 'nothing recorded changed' (then it is flakiness, or the provider).
CREATE OR REPLACE MACRO regressions_since(since) AS TABLE
WITH runs AS (
    SELECT *,
           lag({'run_id': run_id, 'at': run_started_at, 'model_version': model_version,
                'system_fingerprint': system_fingerprint, 'prompt_sha256': prompt_sha256,
                'scenario': scenario, 'tools_sha256': tools_sha256,
                'suite_sha256': suite_sha256, 'code_version': code_version,
                'temperature': temperature, 'generation_params': generation_params,
                'user_model': user_model}) OVER (
               PARTITION BY suite_id, scenario_id, model, prompt_id, memory_mode
               ORDER BY position) AS a
    FROM cell_runs_since(since)
),
pairs AS (
    SELECT suite_id, scenario_id, model, prompt_id, memory_mode, window_runs AS runs,
           window_judged, window_passed,
           a.run_id AS last_passing_run, a.at AS last_passing_at,
           run_id AS first_failing_run, run_started_at AS first_failing_at,
           passed AS failing_passed, judged AS failing_judged,
           list_filter([
               {'input': 'model_version', 'before': a.model_version, 'after': model_version},
               {'input': 'system_fingerprint', 'before': a.system_fingerprint,
                'after': system_fingerprint},
               {'input': 'prompt_sha256', 'before': a.prompt_sha256, 'after': prompt_sha256},
               {'input': 'scenario', 'before': a.scenario, 'after': scenario},
               {'input': 'tools_sha256', 'before': a.tools_sha256, 'after': tools_sha256},
               {'input': 'suite_sha256', 'before': a.suite_sha256, 'after': suite_sha256},
               {'input': 'code_version', 'before': a.code_version, 'after': code_version},
               {'input': 'temperature', 'before': a.temperature, 'after': temperature},
               {'input': 'generation_params', 'before': a.generation_params,
                'after': generation_params},
               {'input': 'user_model', 'before': a.user_model, 'after': user_model}
           ], lambda x: x.before IS DISTINCT FROM x.after) AS changed
    FROM runs
    WHERE cell_class = 'regressed' AND position = last_passing + 1
)
SELECT *,
       CASE WHEN len(changed) = 0 THEN 'nothing recorded changed'
            ELSE array_to_string(list_transform(changed, lambda x: x.input), ', ')
       END AS what_changed
FROM pairs;

-- The regressions over every run in the warehouse, for ad-hoc SQL (``agentsweep sql``; for a
-- window: ``regressions_since(now() - INTERVAL 30 DAY)``, each cell's class:
-- ``cell_window(since)``).
CREATE OR REPLACE VIEW regression_attribution AS
SELECT * FROM regressions_since(TIMESTAMPTZ '-infinity');
