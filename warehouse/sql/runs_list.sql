-- Every run in the warehouse, newest first: when, what grid, and how its trials ended. A run
-- is unfinished until its whole grid is final (a resume has trials to run): a run stopped
-- mid-way, or split into shards (several drivers, one invocation each) of which one has not
-- ended, or was killed before it recorded its start.
WITH invocations AS (
    SELECT run_id, min(started_at) AS started, max(finished_at) AS finished,
           count(*) AS invocations, max(grid_size) AS grid, any_value(models) AS models
    FROM runs
    GROUP BY run_id
),
outcomes AS (
    SELECT run_id,
           count(*) FILTER (WHERE passed) AS passed,
           count(*) FILTER (WHERE status = 'complete' AND NOT passed) AS failed,
           count(*) FILTER (WHERE status IN ('agent_error', 'limit')) AS agent_errors,
           count(*) FILTER (WHERE status = 'incomplete') AS incomplete,
           count(*) FILTER (WHERE status <> 'incomplete') AS final
    FROM trials
    GROUP BY run_id
)
SELECT i.run_id, strftime(i.started, '%Y-%m-%d %H:%M') AS started,
       CASE WHEN i.finished IS NULL OR coalesce(o.final, 0) < i.grid THEN 'unfinished'
            ELSE strftime(i.finished, '%H:%M') END AS finished,
       i.invocations, i.grid, array_to_string(i.models, ', ') AS models,
       coalesce(o.passed, 0) AS passed, coalesce(o.failed, 0) AS failed,
       coalesce(o.agent_errors, 0) AS agent_errors, coalesce(o.incomplete, 0) AS incomplete
FROM invocations AS i
LEFT JOIN outcomes AS o USING (run_id)
ORDER BY i.started DESC;
