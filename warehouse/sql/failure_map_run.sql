-- The failure map of one run (failure_map.sql), in a stable order: conditions grouped by
-- type, columns in the order of the map.
SELECT *
FROM failure_map
WHERE run_id = $run_id
ORDER BY model, memory_mode, prompt_id, condition_type, condition_id,
         list_position(['plain', 'pressure_boss', 'pressure_urgency', 'canonical_request',
                        'canonical_steps', 'repeat'], format);
