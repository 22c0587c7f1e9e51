-- Trends across runs (a nightly series, or any runs sharing a suite), created by
-- warehouse.query after views.sql. A cell is scenario x model x prompt x memory mode (within
-- its suite); a run of the cell passes when every trial with a verdict passed (an agent error
-- or a limit counts against the agent; an incomplete trial, or a verdict left unknown by a
-- check that raised, counts neither way). Runs are ordered by when they started.

-- When each run started: its first invocation, else (a run written without a runs row) its
-- first trial.
CREATE OR REPLACE VIEW run_started AS
SELECT run_id, min(started_at) AS started_at
FROM (SELECT run_id, started_at FROM runs_all
      UNION ALL
      SELECT run_id, min(started_at) FROM trials_all GROUP BY run_id)
GROUP BY run_id;

-- The recorded value of one input over a cell's trials in a run, as one text ('not recorded'
-- for a null; 'least … greatest' when its trials differ): equal texts mean nothing recorded
-- changed. (min and max, not a list of distinct values: this runs once per cell per run.)
CREATE OR REPLACE MACRO recorded_values(value) AS
    CASE WHEN min(coalesce(CAST(value AS VARCHAR), 'not recorded'))
              = max(coalesce(CAST(value AS VARCHAR), 'not recorded'))
         THEN min(coalesce(CAST(value AS VARCHAR), 'not recorded'))
         ELSE min(coalesce(CAST(value AS VARCHAR), 'not recorded')) || ' … '
              || max(coalesce(CAST(value AS VARCHAR), 'not recorded')) END;

-- One row per cell per run: its outcome counts, pass rate and every recorded input of its
-- trials (the model's reported version, the prompt, scenario and tool-schema hashes, the suite
-- hash, the code version, the generation parameters).
CREATE OR REPLACE VIEW cell_history AS
SELECT t.suite_id, t.scenario_id, t.model, t.prompt_id, t.memory_mode, t.run_id,
       s.started_at AS run_started_at,
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
FROM trials AS t
JOIN run_started AS s USING (run_id)
GROUP BY t.suite_id, t.scenario_id, t.model, t.prompt_id, t.memory_mode, t.run_id,
         s.started_at;

-- A cell's runs since ``since`` that have a verdict, in order, each with whether it passed
-- and the position of the cell's last passing run.
CREATE OR REPLACE MACRO cell_runs_since(since) AS TABLE
WITH judged AS (
    SELECT *, pass_rate = 1 AS passing
    FROM cell_history
    WHERE run_started_at >= since AND judged > 0
)
SELECT *,
       row_number() OVER cell AS position,
       max(CASE WHEN passing THEN 1 ELSE 0 END) OVER rest = 0 AS failing_since,
       bool_and(passing) OVER upto AS passing_so_far
FROM judged
WINDOW cell AS (PARTITION BY suite_id, scenario_id, model, prompt_id, memory_mode
                ORDER BY run_started_at, run_id),
       rest AS (cell ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING),
       upto AS (cell ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW);

-- Each cell over the runs since ``since``: counts, pass rate and its class, one of
-- passing (every run passed), failing (no trial passed), regressed (it passed in every run up
-- to its last passing one and failed in every run since), flaky (any other mix: a pass rate
-- between 0 and 1 over the window).
CREATE OR REPLACE MACRO cell_window(since) AS TABLE
WITH runs AS (SELECT * FROM cell_runs_since(since)),
per_cell AS (
    SELECT suite_id, scenario_id, model, prompt_id, memory_mode,
           count(*) AS runs, sum(judged) AS judged, sum(passed) AS passed,
           sum(passed) / sum(judged) AS pass_rate,
           min(run_started_at) AS first_run_at, max(run_started_at) AS last_run_at,
           max(position) FILTER (WHERE passing) AS last_passing,
           bool_and(passing) AS always_passing,
           bool_and(passing_so_far OR failing_since) AS clean_break
    FROM runs
    GROUP BY suite_id, scenario_id, model, prompt_id, memory_mode
)
SELECT suite_id, scenario_id, model, prompt_id, memory_mode, runs, judged, passed, pass_rate,
       first_run_at, last_run_at,
       CASE WHEN always_passing THEN 'passing'
            WHEN passed = 0 THEN 'failing'
            WHEN last_passing IS NOT NULL AND clean_break THEN 'regressed'
            ELSE 'flaky' END AS cell_class,
       last_passing
FROM per_cell;

-- Each regressed cell since ``since``: its last passing run, its first failing run, and what
-- changed between them among the recorded inputs (``changed``: input, before, after), or
-- 'nothing recorded changed' (then it is flakiness, or the provider).
CREATE OR REPLACE MACRO regressions_since(since) AS TABLE
WITH runs AS (SELECT * FROM cell_runs_since(since)),
cells AS (SELECT * FROM cell_window(since) WHERE cell_class = 'regressed'),
pairs AS (
    SELECT c.suite_id, c.scenario_id, c.model, c.prompt_id, c.memory_mode, c.runs,
           c.judged AS window_judged, c.passed AS window_passed,
           a.run_id AS last_passing_run, a.run_started_at AS last_passing_at,
           b.run_id AS first_failing_run, b.run_started_at AS first_failing_at,
           b.passed AS failing_passed, b.judged AS failing_judged,
           list_filter([
               {'input': 'model_version', 'before': a.model_version, 'after': b.model_version},
               {'input': 'system_fingerprint', 'before': a.system_fingerprint,
                'after': b.system_fingerprint},
               {'input': 'prompt_sha256', 'before': a.prompt_sha256, 'after': b.prompt_sha256},
               {'input': 'scenario', 'before': a.scenario, 'after': b.scenario},
               {'input': 'tools_sha256', 'before': a.tools_sha256, 'after': b.tools_sha256},
               {'input': 'suite_sha256', 'before': a.suite_sha256, 'after': b.suite_sha256},
               {'input': 'code_version', 'before': a.code_version, 'after': b.code_version},
               {'input': 'temperature', 'before': a.temperature, 'after': b.temperature},
               {'input': 'generation_params', 'before': a.generation_params,
                'after': b.generation_params},
               {'input': 'user_model', 'before': a.user_model, 'after': b.user_model}
           ], lambda x: x.before IS DISTINCT FROM x.after) AS changed
    FROM cells AS c
    JOIN runs AS a USING (suite_id, scenario_id, model, prompt_id, memory_mode)
    JOIN runs AS b USING (suite_id, scenario_id, model, prompt_id, memory_mode)
    WHERE a.position = c.last_passing AND b.position = c.last_passing + 1
)
SELECT *,
       CASE WHEN len(changed) = 0 THEN 'nothing recorded changed'
            ELSE array_to_string(list_transform(changed, lambda x: x.input), ', ')
       END AS what_changed
FROM pairs;

-- The same over every run in the warehouse, for ad-hoc SQL (``agentsweep sql``).
CREATE OR REPLACE VIEW cell_trends AS
SELECT * FROM cell_window(TIMESTAMPTZ '-infinity');

CREATE OR REPLACE VIEW regression_attribution AS
SELECT * FROM regressions_since(TIMESTAMPTZ '-infinity');
