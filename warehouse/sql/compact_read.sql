-- The rows of one run's files of one table, in compaction order (warehouse.compact). The two
-- placeholders: the run's part files, and the table's sort columns then filename and
-- file_row_number (the original file and position: a trial's rows keep their order). Columns
-- a file of an older schema version lacks read as NULL (union_by_name).
SELECT * EXCLUDE (filename, file_row_number)
FROM read_parquet(
    [{files}],
    union_by_name = true, hive_partitioning = false, filename = true, file_row_number = true
)
ORDER BY {order};
