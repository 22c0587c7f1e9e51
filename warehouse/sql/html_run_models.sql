-- The HTML report's header: each model of run $run_id with the versions and backend
-- configurations its provider reported (null when it reported none), how it was reached, and
-- its sampling temperatures.
SELECT model,
       any_value(provider) AS provider,
       string_agg(DISTINCT access_channel, ', ' ORDER BY access_channel) AS access_channels,
       string_agg(DISTINCT model_version, ', ' ORDER BY model_version) AS model_versions,
       string_agg(DISTINCT system_fingerprint, ', ' ORDER BY system_fingerprint)
           AS system_fingerprints,
       string_agg(DISTINCT CAST(temperature AS VARCHAR), ', ' ORDER BY CAST(temperature AS VARCHAR))
           AS temperatures,
       count(*) AS trials
FROM trials
WHERE run_id = $run_id
GROUP BY model
ORDER BY model;
