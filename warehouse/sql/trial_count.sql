-- How many final trial rows run $run_id has (0: the run holds no trial).
SELECT count(*) AS trials
FROM trials
WHERE run_id = $run_id;
