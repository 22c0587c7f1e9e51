-- Whether one run's trials files hold one row per trial id (warehouse.compact: then every row
-- is its trial's chosen attempt, warehouse.chosen). The placeholder: the run's files.
SELECT count(*) = count(DISTINCT trial_id)
FROM read_parquet([{files}], union_by_name = true, hive_partitioning = false);
