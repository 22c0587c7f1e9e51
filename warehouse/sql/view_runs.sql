-- Every run for the viewer's index (reports.view), newest first: its kind, grid, models,
-- suites, trials by outcome, cost (known sum and how many trials did not report one), when it
-- started and finished, whether it is still open (its latest invocation, or another while the
-- grid is not all final: the shards of a run end one by one), and for an open one the
-- final trials written since that invocation started (its progress rate), and its latest
-- decision as a candidate (the gate's verdict, baseline and reasons, from the comparisons
-- table: what compare, gate and the flows stored). Reads across runs.
WITH invocations AS (
    SELECT run_id, min(started_at) AS started_at, max(started_at) AS latest_started_at,
           arg_max_null(finished_at, started_at) AS latest_finished_at,
           max(grid_size) AS grid_size, max(repeats) AS repeats,
           list_sort(list_distinct(flatten(list(models)))) AS models,
           list_sort(list_distinct(flatten(list(suite_ids)))) AS suites,
           arg_max(argv, started_at) AS argv,
           count(*) FILTER (WHERE finished_at IS NULL) AS open_invocations
    FROM runs
    GROUP BY run_id
),
decisions AS (
    SELECT run_id, arg_max(verdict, compared_at) AS verdict,
           arg_max(baseline_run_id, compared_at) AS decided_against,
           arg_max(reasons, compared_at) AS verdict_reasons
    FROM comparisons
    GROUP BY run_id
),
outcomes AS (
    SELECT t.run_id,
           count(*) AS trials,
           count(*) FILTER (WHERE t.passed) AS passed,
           count(*) FILTER (WHERE t.status = 'complete' AND NOT t.passed) AS failed,
           count(*) FILTER (WHERE t.status = 'complete' AND t.passed IS NULL) AS unknown,
           count(*) FILTER (WHERE t.status IN ('agent_error', 'limit')) AS agent_errors,
           count(*) FILTER (WHERE t.status = 'incomplete') AS incomplete,
           count(*) FILTER (WHERE t.status <> 'incomplete') AS final,
           sum(t.cost_usd) AS cost_known_usd,
           count(*) FILTER (WHERE t.cost_usd IS NULL) AS cost_unknown,
           min(t.started_at) AS first_trial_at,
           max(t.finished_at) AS last_trial_at,
           count(*) FILTER (WHERE t.status <> 'incomplete'
                            AND t.finished_at >= i.latest_started_at) AS done_since_latest,
           list_sort(list_distinct(list(t.model))) AS trial_models,
           list_sort(list_distinct(list(t.suite_id))) AS trial_suites
    FROM trials AS t
    LEFT JOIN invocations AS i USING (run_id)
    GROUP BY t.run_id
)
SELECT run_id,
       CASE WHEN starts_with(run_id, 'nightly-') OR contains(coalesce(i.argv, ''), 'flows.nightly')
                THEN 'nightly'
            WHEN starts_with(run_id, 'swap-') OR contains(coalesce(i.argv, ''), 'flows.model_swap')
                THEN 'model-swap'
            ELSE 'adhoc' END AS kind,
       coalesce(i.models, o.trial_models) AS models,
       coalesce(i.suites, o.trial_suites) AS suites,
       i.grid_size, i.repeats,
       coalesce(o.trials, 0) AS trials, coalesce(o.passed, 0) AS passed,
       coalesce(o.failed, 0) AS failed, coalesce(o.unknown, 0) AS unknown,
       coalesce(o.agent_errors, 0) AS agent_errors, coalesce(o.incomplete, 0) AS incomplete,
       o.cost_known_usd, coalesce(o.cost_unknown, 0) AS cost_unknown,
       coalesce(i.started_at, o.first_trial_at) AS started_at,
       CASE WHEN i.run_id IS NULL THEN o.last_trial_at ELSE i.latest_finished_at END
           AS finished_at,
       i.run_id IS NOT NULL AND (i.latest_finished_at IS NULL OR (
           i.open_invocations > 0 AND coalesce(o.final, 0) < i.grid_size)) AS open,
       i.latest_started_at, coalesce(o.done_since_latest, 0) AS done_since_latest,
       o.last_trial_at, d.verdict, d.decided_against, d.verdict_reasons
FROM invocations AS i
FULL OUTER JOIN outcomes AS o USING (run_id)
LEFT JOIN decisions AS d USING (run_id)
ORDER BY started_at DESC NULLS LAST, run_id;
