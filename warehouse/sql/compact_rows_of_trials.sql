-- Whether every row of one run's files of a table (events, checks, ...) belongs to an attempt
-- of the run's trials files (warehouse.compact: with one trials row per trial, every row is then
-- of its trial's chosen attempt, warehouse.chosen). The placeholders: the table's files, the
-- run's trials files.
SELECT NOT EXISTS (
    SELECT 1
    FROM read_parquet([{files}], union_by_name = true, hive_partitioning = false) AS r
    ANTI JOIN read_parquet([{trials}], union_by_name = true, hive_partitioning = false) AS t
        USING (trial_id, attempt_id)
);
