-- Whether the warehouse holds any row of run $run_id (an invocation, a trial or an attempt).
SELECT (SELECT count(*) FROM runs_all WHERE run_id = $run_id)
     + (SELECT count(*) FROM trials_all WHERE run_id = $run_id)
     + (SELECT count(*) FROM attempts_all WHERE run_id = $run_id) > 0;
