-- Views over the raw tables (trials_all, events_all, checks_all, runs_all), created by
-- warehouse.query. A trial may have several rows (an incomplete attempt, then a resumed one):
-- `trials` keeps one per (run_id, trial_id), a final outcome over an incomplete one, then the
-- latest. `events` and `checks` keep only the rows of that chosen attempt. The runs whose
-- compacted files hold only chosen rows (warehouse.chosen) are read as they are
-- (trials_chosen, events_chosen, ...); the pick is made over the others (trials_rest, ...).
-- A trial written before agents were a grid dimension (no `agent`) was the built-in agent's.
CREATE OR REPLACE VIEW trials AS
SELECT * REPLACE (coalesce(agent, 'builtin') AS agent) FROM trials_chosen
UNION ALL BY NAME
(
    SELECT * REPLACE (coalesce(agent, 'builtin') AS agent)
    FROM trials_rest
    QUALIFY row_number() OVER (
        PARTITION BY run_id, trial_id
        ORDER BY (status = 'incomplete'), finished_at DESC, attempt_id
    ) = 1
);

-- A final trial's cell (scenario x agent x model x prompt x memory mode, repeat), outcome, first
-- violation, usage and versions: what comparisons and per-cell reports read. Usage columns stay
-- null when unknown.
CREATE OR REPLACE VIEW trial_outcomes AS
SELECT
    run_id,
    trial_id,
    scenario_id,
    scenario_version,
    scenario_sha256,
    suite_id,
    agent,
    model,
    model_version,
    access_channel,
    prompt_id,
    prompt_sha256,
    memory_mode,
    repeat,
    status,
    passed,
    error_kind,
    error_message,
    score_state,
    score_response,
    vetoed,
    first_violation_check,
    first_violation_turn,
    first_violation_step,
    cost_usd,
    input_tokens,
    output_tokens,
    latency_ms,
    tool_calls,
    code_version
FROM trials;

CREATE OR REPLACE VIEW events AS
SELECT * FROM events_chosen
UNION ALL BY NAME
SELECT e.*
FROM events_rest AS e
SEMI JOIN trials AS t USING (run_id, trial_id, attempt_id);

CREATE OR REPLACE VIEW checks AS
SELECT * FROM checks_chosen
UNION ALL BY NAME
SELECT c.*
FROM checks_rest AS c
SEMI JOIN trials AS t USING (run_id, trial_id, attempt_id);

-- An invocation writes its row when it starts and again when it finishes: keep the latest.
CREATE OR REPLACE VIEW runs AS
SELECT *
FROM runs_all
QUALIFY row_number() OVER (
    PARTITION BY run_id, invocation_id ORDER BY finished_at DESC NULLS LAST
) = 1;

-- Every execution attempt of a trial (retries, worker deaths, resumed invocations). The final
-- attempt is the one whose attempt_id the `trials` view holds.
CREATE OR REPLACE VIEW attempts AS
SELECT * FROM attempts_all;

-- Baseline vs candidate comparisons (one row per paired cell; run_id is the candidate).
CREATE OR REPLACE VIEW comparisons AS
SELECT * FROM comparisons_all;

-- Condition tasks (seed 002): the row of each trial's chosen attempt.
CREATE OR REPLACE VIEW condition_trials AS
SELECT * FROM condition_trials_chosen
UNION ALL BY NAME
SELECT c.*
FROM condition_trials_rest AS c
SEMI JOIN trials AS t USING (run_id, trial_id, attempt_id);

-- Database domains (seed 004): each trial's database before and after the dialog, and the
-- diagnostic metrics chosen in advance; the rows of each trial's chosen attempt.
CREATE OR REPLACE VIEW snapshots AS
SELECT * FROM snapshots_chosen
UNION ALL BY NAME
SELECT s.*
FROM snapshots_rest AS s
SEMI JOIN trials AS t USING (run_id, trial_id, attempt_id);

CREATE OR REPLACE VIEW diagnostics AS
SELECT * FROM diagnostics_chosen
UNION ALL BY NAME
SELECT d.*
FROM diagnostics_rest AS d
SEMI JOIN trials AS t USING (run_id, trial_id, attempt_id);
