"""The trace schema: the single source for every warehouse table.

Each table is declared once here as a list of columns. The pyarrow schemas the writer uses,
the golden JSON file under ``warehouse/golden/`` and the DuckDB views all derive from these
declarations; ``tests/unit/warehouse/test_schema.py`` fails if the golden file drifts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, get_args

import pyarrow as pa

SCHEMA_VERSION = 10
"""v2: trials.system_fingerprint, events.finish_reason and cached_input_tokens,
checks.check_version, runs.config_json. v3: events.blocked. v4: the comparisons table. v5:
trials.access_channel, events.effects, the condition_trials, snapshots, diagnostics and
judgments tables. v6: checks.counted, trials.reward_basis and
nl_assertions. v7: comparisons.pass_rate_delta, interval_low and interval_high are nullable
(unknown when no paired trial is complete). v8: trials.passed is also null for a complete
trial when a check raised, a checks row of kind ``check_error`` (no new column). v9: events of
kind ``nudge`` (the local models' agent adaptation; no new column). v10: trials.agent,
agent_version and agent_sha256 (the agent under test; null in older files: the built-in one).
Files of older versions are read on: their missing columns are null (the readers derive
``blocked`` from the v2 error text)."""

TrialStatus = Literal["complete", "agent_error", "limit", "incomplete"]
"""Closed set of trial outcomes. ``incomplete`` = infrastructure failure, never the agent's;
``agent_error`` and ``limit`` are the agent's (a closed error kind says which)."""
TRIAL_STATUSES: tuple[TrialStatus, ...] = get_args(TrialStatus)
AttemptOutcome = TrialStatus
"""An attempt ends in the status its trial would have if it were the final attempt."""
ATTEMPT_OUTCOMES: tuple[AttemptOutcome, ...] = TRIAL_STATUSES

AccessChannel = Literal["direct_api", "router", "local_server", "reference"]
"""How a model under test was reached: a provider's own API, a router (one API in front of many
providers), a server on this machine, or an offline reference model."""
ACCESS_CHANNELS: tuple[AccessChannel, ...] = get_args(AccessChannel)

MapColumn = Literal["plain", "pressure_boss", "pressure_urgency", "canonical_request",
                    "canonical_steps", "repeat"]
"""A column of the failure map (the unstated-conditions method): the five delivery formats of a
forbidden task's
first submission, then the bare repeat after a refusal."""
MAP_COLUMNS: tuple[MapColumn, ...] = get_args(MapColumn)

EventKind = Literal[
    "user_message", "memory_update", "assistant_message", "tool_call", "tool_result", "nudge"
]
"""``nudge``: the agent asked the model once more after an empty reply (the local models'
adaptation, ``pipeline.trace.Nudge``); written since schema v9, no column of its own."""
EVENT_KINDS: tuple[EventKind, ...] = get_args(EventKind)


@dataclass(frozen=True)
class Column:
    name: str
    type: pa.DataType
    nullable: bool
    doc: str


@dataclass(frozen=True)
class Table:
    name: str
    doc: str
    columns: tuple[Column, ...]

    def arrow_schema(self) -> pa.Schema:
        return pa.schema(
            [
                pa.field(c.name, c.type, nullable=c.nullable, metadata={"doc": c.doc})
                for c in self.columns
            ],
            metadata={"table": self.name, "schema_version": str(SCHEMA_VERSION)},
        )

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]


def _c(name: str, type_: pa.DataType, doc: str, *, nullable: bool = False) -> Column:
    return Column(name, type_, nullable, doc)


_TS = pa.timestamp("us", tz="UTC")
_KEY = (
    _c("schema_version", pa.int32(), "Version of this schema the row was written with."),
    _c("run_id", pa.string(), "The sweep run this row belongs to."),
)
_TRIAL_KEY = (
    *_KEY,
    _c("trial_id", pa.string(), "Stable hash of the trial's identity (see pipeline.sweep.grid)."),
    _c("attempt_id", pa.string(), "Unique id of the execution attempt that produced the row."),
)

RUNS = Table(
    "runs",
    "One row per invocation of a sweep (a resumed run adds a row with the same run_id); "
    "written when it starts and again when it finishes (the view keeps the latest).",
    (
        *_KEY,
        _c("invocation_id", pa.string(), "Unique id of this invocation of the run."),
        _c("started_at", _TS, "When the invocation started."),
        _c("finished_at", _TS, "When the invocation finished.", nullable=True),
        _c("code_version", pa.string(), "agentsweep version and git commit."),
        _c("suite_ids", pa.list_(pa.string()), "Suites in the grid."),
        _c("suite_sha256s", pa.list_(pa.string()), "Content hashes of those suites."),
        _c("models", pa.list_(pa.string()), "Models in the grid."),
        _c("memory_modes", pa.list_(pa.string()), "Memory modes in the grid."),
        _c("repeats", pa.int32(), "Repeats per cell."),
        _c("grid_size", pa.int64(), "Number of trials in the grid."),
        _c("trials_run", pa.int64(), "Trials executed by this invocation (resume skips some)."),
        _c("ray_address", pa.string(), "Ray cluster address, null for a local Ray.", nullable=True),
        _c("argv", pa.string(), "Command line of the invocation, secrets redacted."),
        _c("config_json", pa.string(), "The run's grid options as JSON, secrets redacted "
           "(a --resume with only --run-id reuses them).", nullable=True),
    ),
)

TRIALS = Table(
    "trials",
    "One row per trial execution; the view keeps the final row per (run_id, trial_id).",
    (
        *_TRIAL_KEY,
        _c("scenario_id", pa.string(), "Scenario id from the catalog."),
        _c("scenario_version", pa.int32(), "Scenario version from the catalog."),
        _c("scenario_sha256", pa.string(), "Hash of the scenario's canonical JSON."),
        _c("scenario_class", pa.string(), "reveal / revision / function_switch / control / ..."),
        _c("suite_id", pa.string(), "Suite (file stem) the scenario came from."),
        _c("suite_sha256", pa.string(), "Hash of the suite file's bytes."),
        _c("domain", pa.string(), "Domain of the scenario."),
        _c("model", pa.string(), "Model name under test, as the sweep named it (e.g. "
           "local/default, openai/gpt-4o-mini)."),
        _c("provider", pa.string(), "Provider group (LiteLLM provider prefix)."),
        _c("access_channel", pa.string(), "How the model was reached: " +
           " / ".join(ACCESS_CHANNELS) + " (null in files before v5).", nullable=True),
        _c("model_version", pa.string(), "Model version the provider reported (local models: "
           "the GGUF's sha256).", nullable=True),
        _c("system_fingerprint", pa.string(), "Backend configuration the provider reported "
           "(local models: runtime version, chat-template hash, tool-call adapter).",
           nullable=True),
        _c("temperature", pa.float64(), "Sampling temperature."),
        _c("generation_params", pa.string(), "All generation params as canonical JSON."),
        _c("seed", pa.int64(), "Seed passed to the model, if any.", nullable=True),
        _c("prompt_id", pa.string(), "System prompt id."),
        _c("prompt_sha256", pa.string(), "Hash of the system prompt text."),
        _c("tools_sha256", pa.string(), "Hash of the domain's tool schemas."),
        _c("memory_mode", pa.string(), "Agent memory mode: chat / summary / structured (the "
           "built-in agent), own (an external agent's own memory)."),
        _c("repeat", pa.int32(), "Repeat index, 0-based."),
        _c("status", pa.string(), " / ".join(TRIAL_STATUSES) + "."),
        _c("passed", pa.bool_(), "All checks passed; null unless status is final, and null "
           "(unknown) when a check raised: its checks row has kind check_error, and rescore "
           "fills the verdict once the check is fixed.", nullable=True),
        _c("error_kind", pa.string(), "Closed error kind when status is not complete.",
           nullable=True),
        _c("error_message", pa.string(), "Error text, secrets redacted.", nullable=True),
        _c("score_state", pa.int8(), "1/0: active memory matches the latest intent; null when "
           "not applicable (chat mode, or no expected state).", nullable=True),
        _c("score_invalidation", pa.int8(), "1/0: results of superseded values were recomputed; "
           "null when the scenario invalidates nothing.", nullable=True),
        _c("score_function", pa.int8(), "1/0: the right operation, no forbidden one; null when "
           "the scenario sets no function rule.", nullable=True),
        _c("score_arguments", pa.int8(), "1/0: allowed calls use the current values; null when "
           "the scenario sets no argument rule.", nullable=True),
        _c("score_response", pa.int8(), "1/0: replies claim nothing the journal lacks and deny "
           "nothing it has; clarification where (and only where) due.", nullable=True),
        _c("vetoed", pa.bool_(), "A forbidden state-changing call failed the whole trial.",
           nullable=True),
        _c("first_violation_turn", pa.int32(), "Turn of the first violation.", nullable=True),
        _c("first_violation_step", pa.int32(), "Step of the first violation.", nullable=True),
        _c("first_violation_check", pa.string(), "check_id of the first violation.",
           nullable=True),
        _c("steps_to_correct_continuation", pa.int32(), "Model steps from the turning point "
           "to the first step with no violation; null when no turning point.", nullable=True),
        _c("repeated_searches", pa.int32(), "Read-tool calls repeating an earlier call's tool "
           "and arguments exactly.", nullable=True),
        _c("forbidden_calls_attempted", pa.int32(), "Calls of a tool in a span where it is "
           "forbidden (blocked ones included).", nullable=True),
        _c("clarification_questions", pa.int32(), "Replies that ask the user a question.",
           nullable=True),
        _c("failure_origin", pa.string(), "structured mode: memory (the state update was wrong) "
           "or planner (wrong action after a correct update).", nullable=True),
        _c("turns", pa.int32(), "User turns played."),
        _c("model_calls", pa.int32(), "Model calls made."),
        _c("tool_calls", pa.int32(), "Tool calls made."),
        _c("input_tokens", pa.int64(), "Sum of reported prompt tokens; null if any unknown.",
           nullable=True),
        _c("output_tokens", pa.int64(), "Sum of reported completion tokens; null if unknown.",
           nullable=True),
        _c("cost_usd", pa.float64(), "Reported cost; null when not reported.", nullable=True),
        _c("user_model", pa.string(), "The user simulator's model; null when no simulator "
           "played the user (pipeline.user.simulator).", nullable=True),
        _c("user_prompt_sha256", pa.string(), "Hash of the simulator's prompt template.",
           nullable=True),
        _c("user_model_calls", pa.int32(), "Calls of the user simulator (not in model_calls).",
           nullable=True),
        _c("user_input_tokens", pa.int64(), "The simulator's prompt tokens; null if unknown.",
           nullable=True),
        _c("user_output_tokens", pa.int64(), "The simulator's completion tokens; null if "
           "unknown.", nullable=True),
        _c("user_cost_usd", pa.float64(), "The simulator's reported cost (not in cost_usd); "
           "null when not reported.", nullable=True),
        _c("reward_basis", pa.list_(pa.string()), "An imported benchmark's reward components "
           "(the scenario's reward_basis: database, communicate, action, nl_assertion); null "
           "when it has none.", nullable=True),
        _c("nl_assertions", pa.int32(), "How many natural-language assertions the scenario has "
           "(for the judge); null when it has none.", nullable=True),
        _c("agent", pa.string(), "The agent under test: builtin (agentsweep's own loop), a "
           "Python agent (path/file.py:attr or module:attr) or an HTTP agent (its URL); null "
           "in files written before agents were a grid dimension (builtin).", nullable=True),
        _c("agent_version", pa.string(), "The agent's own version string (its __version__, or "
           "what its service reports); null when it states none.", nullable=True),
        _c("agent_sha256", pa.string(), "Hash of a Python agent's code file; null for builtin "
           "and HTTP agents.", nullable=True),
        _c("latency_ms", pa.float64(), "Wall time of the trial."),
        _c("started_at", _TS, "Trial start."),
        _c("finished_at", _TS, "Trial end."),
        _c("code_version", pa.string(), "agentsweep version and git commit."),
        _c("node_id", pa.string(), "Ray node that ran the trial.", nullable=True),
    ),
)

EVENTS = Table(
    "events",
    "One row per user message, assistant message, tool call and tool result.",
    (
        *_TRIAL_KEY,
        _c("seq", pa.int32(), "Order of the event within the trial, 0-based."),
        _c("turn", pa.int32(), "User turn, 1-based."),
        _c("step", pa.int32(), "Model step within the turn, 0-based."),
        _c("kind", pa.string(), " / ".join(EVENT_KINDS) + "."),
        _c("content", pa.string(), "Message text, redacted.", nullable=True),
        _c("tool_name", pa.string(), "Tool name for tool events.", nullable=True),
        _c("tool_call_id", pa.string(), "Call id linking a tool call to its result.",
           nullable=True),
        _c("arguments", pa.string(), "Tool call arguments as JSON.", nullable=True),
        _c("result", pa.string(), "Tool result as JSON.", nullable=True),
        _c("intercepted", pa.bool_(), "State-changing call intercepted by the sandbox.",
           nullable=True),
        _c("state_revision", pa.int64(), "Sandbox state revision at the call.", nullable=True),
        _c("tool_error", pa.string(), "Error the tool returned to the agent; for a memory_update, "
           "why the update was rejected.", nullable=True),
        _c("blocked", pa.bool_(), "Tool events: the memory gate refused the call before it "
           "reached the sandbox (no effect); null for other kinds.", nullable=True),
        _c("effects", pa.int32(), "Tool calls of a database domain's write: rows it changed "
           "(also when it then answered with an error); null otherwise.", nullable=True),
        _c("active_state_before", pa.string(), "Agent memory before the turn (JSON).",
           nullable=True),
        _c("active_state_after", pa.string(), "Agent memory after the turn (JSON).",
           nullable=True),
        _c("input_tokens", pa.int64(), "Prompt tokens of this model call.", nullable=True),
        _c("output_tokens", pa.int64(), "Completion tokens of this model call.", nullable=True),
        _c("cached_input_tokens", pa.int64(), "Prompt tokens of this call the provider served "
           "from its prompt cache; null when not reported.", nullable=True),
        _c("latency_ms", pa.float64(), "Latency of this model call.", nullable=True),
        _c("finish_reason", pa.string(), "Why the model stopped, as reported (stop, tool_calls, "
           "length...), for assistant messages and memory updates.", nullable=True),
        _c("simulated", pa.bool_(), "User messages: a user simulator said it (its call's "
           "tokens and latency set); null for other kinds.", nullable=True),
    ),
)

CHECKS = Table(
    "checks",
    "One row per check per trial.",
    (
        *_TRIAL_KEY,
        _c("check_id", pa.string(), "Check identifier, e.g. forbidden_tool:reserve_room@2."),
        _c("check_kind", pa.string(), "Kind of check (pipeline.scoring.CheckKind); check_error: "
           "the check raised (detail: exception type and message, secrets redacted; passed "
           "false, counted false, the trial's passed null)."),
        _c("score", pa.string(), "Which of the five scores the check feeds: state, "
           "invalidation, function, arguments, response.", nullable=True),
        _c("passed", pa.bool_(), "Whether the check held."),
        _c("turn", pa.int32(), "Turn of the first violation, or null.", nullable=True),
        _c("step", pa.int32(), "Step of the first violation, or null.", nullable=True),
        _c("detail", pa.string(), "What was seen."),
        _c("check_version", pa.int32(), "Version of the check kind's logic that produced the "
           "row (pipeline.scoring.CHECK_VERSIONS).", nullable=True),
        _c("counted", pa.bool_(), "Whether the check counts toward trials.passed and the scores; "
           "false: a recorded signal only (tau2's action check outside the scenario's "
           "reward_basis). Null in files before v6: every check counted.", nullable=True),
    ),
)

ATTEMPTS = Table(
    "attempts",
    "One row per execution attempt of a trial, retried ones included; the trials table holds "
    "only the final attempt (joined on attempt_id).",
    (
        *_TRIAL_KEY,
        _c("attempt", pa.int32(), "Attempt number of the trial within the run, 1-based; a resumed "
           "run continues the count."),
        _c("outcome", pa.string(), "The attempt's trial status: "
           + " / ".join(ATTEMPT_OUTCOMES) + "."),
        _c("error_kind", pa.string(), "Closed error kind (pipeline.errors) when not complete.",
           nullable=True),
        _c("message", pa.string(), "Error text, secrets redacted.", nullable=True),
        _c("node_id", pa.string(), "Ray node that ran the attempt; null when its worker died.",
           nullable=True),
        _c("started_at", _TS, "Attempt start."),
        _c("finished_at", _TS, "Attempt end."),
        _c("retry_delay_s", pa.float64(), "Backoff before the next attempt (Retry-After "
           "honoured); null when the attempt was not retried.", nullable=True),
    ),
)

TransitionClass = Literal[
    "new_failure", "stability_regression", "fixed", "flaky", "unchanged", "unpaired"
]
"""Closed set of baseline -> candidate transitions of one cell (k/n over paired repeats):
new_failure n/n -> 0/n; stability_regression n/n -> some but not all; fixed anything but n/n ->
n/n; unchanged n/n -> n/n or 0/n -> 0/n; flaky every other case (a partial rate on a side);
unpaired no repeat with a final outcome in both runs."""
TRANSITION_CLASSES: tuple[TransitionClass, ...] = get_args(TransitionClass)
Verdict = Literal["admit", "block", "incomplete"]
"""Closed set of gate verdicts (exit codes 0, 1, 3)."""
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)

COMPARISONS = Table(
    "comparisons",
    "One row per paired cell of a baseline vs candidate comparison (run_id is the candidate), "
    "with the comparison's verdict and interval repeated on each row (the decision record).",
    (
        *_KEY,
        _c("comparison_id", pa.string(), "Unique id of this comparison."),
        _c("baseline_run_id", pa.string(), "The baseline run."),
        _c("compared_at", _TS, "When the comparison was made."),
        _c("scenario_id", pa.string(), "Scenario id (pairing key)."),
        _c("prompt_id", pa.string(), "Prompt id (pairing key)."),
        _c("memory_mode", pa.string(), "Memory mode (pairing key)."),
        _c("baseline_model", pa.string(), "Model of the cell in the baseline run."),
        _c("candidate_model", pa.string(), "Model of the cell in the candidate run."),
        _c("critical", pa.bool_(), "The scenario is marked critical."),
        _c("baseline_k", pa.int32(), "Passed paired repeats in the baseline."),
        _c("baseline_n", pa.int32(), "Paired repeats with a final outcome in both runs."),
        _c("candidate_k", pa.int32(), "Passed paired repeats in the candidate."),
        _c("candidate_n", pa.int32(), "Same as baseline_n (paired)."),
        _c("transition", pa.string(), " / ".join(TRANSITION_CLASSES) + "."),
        _c("baseline_sha256", pa.string(), "Scenario content hash in the baseline."),
        _c("candidate_sha256", pa.string(), "Scenario content hash in the candidate."),
        _c("expectation_changed", pa.bool_(), "The hashes differ: needs a review."),
        _c("reviewed", pa.bool_(), "A review file acknowledged the change (null if unchanged).",
           nullable=True),
        _c("verdict", pa.string(), "The gate's verdict: " + " / ".join(VERDICTS) + "."),
        _c("reasons", pa.list_(pa.string()), "Every reason the gate blocked (empty: admit)."),
        _c("pass_rate_delta", pa.float64(), "Candidate minus baseline pass rate over paired "
           "trials, mean over scenarios (null: no paired trial is complete).", nullable=True),
        _c("interval_low", pa.float64(), "Paired bootstrap percentile interval, low end (null: "
           "no paired trial is complete).", nullable=True),
        _c("interval_high", pa.float64(), "Paired bootstrap percentile interval, high end "
           "(null: no paired trial is complete).", nullable=True),
        _c("confidence", pa.float64(), "Two-sided confidence of the interval."),
        _c("resamples", pa.int32(), "Bootstrap resamples."),
        _c("seed", pa.int64(), "Bootstrap seed."),
    ),
)

CONDITION_TRIALS = Table(
    "condition_trials",
    "One row per trial attempt of a condition task (the unstated-conditions method; "
    "docs/conditions.md): which condition, which delivery format, what the agent did (from "
    "the journal) and said.",
    (
        *_TRIAL_KEY,
        _c("scenario_id", pa.string(), "The generated scenario: <task id>.<format> or .twin."),
        _c("pair_id", pa.string(), "The condition task: the same for a forbidden task and its "
           "allowed twin."),
        _c("condition_id", pa.string(), "<write tool>/<condition id> (tools.json)."),
        _c("condition_type", pa.string(), "existence / state / deadline / authority / quantity "
           "/ order / other."),
        _c("tool", pa.string(), "The write tool the condition belongs to."),
        _c("enforced", pa.string(), "Where the condition is enforced today: code / prompt / "
           "nowhere."),
        _c("stated", pa.string(), "rule: the data state the rule in words; fact: only the "
           "fact."),
        _c("changed_field", pa.string(), "The seed-state field the twin changes."),
        _c("role", pa.string(), "forbidden / twin."),
        _c("format", pa.string(), "Delivery format of the first submission: plain / "
           "pressure_boss / pressure_urgency / canonical_request / canonical_steps."),
        _c("outcome", pa.string(), "First submission, from the journal: failure / refusal / "
           "general_refusal / no_answer (forbidden); executed / not_executed (twin)."),
        _c("report", pa.string(), "What was said against what was done: silent_success / "
           "incomplete_checklist / honest_report / false_success; null otherwise.",
           nullable=True),
        _c("reply", pa.string(), "The first submission's final reply (redacted, first 500 "
           "characters).", nullable=True),
        _c("read_first", pa.bool_(), "The agent called another tool (a read) before the write "
           "(or, with no write, at all): it could have seen the obstacle in the data.",
           nullable=True),
        _c("repeat_played", pa.bool_(), "The bare repeat after a refusal was played."),
        _c("repeat_outcome", pa.string(), "The repeat's outcome (null when not played).",
           nullable=True),
        _c("repeat_report", pa.string(), "The repeat's report kind.", nullable=True),
        _c("repeat_reply", pa.string(), "The repeat's final reply (first 500 characters).",
           nullable=True),
    ),
)

SNAPSHOT_PHASES = ("before", "after", "expected")
SNAPSHOTS = Table(
    "snapshots",
    "A database domain's per-trial database (the three-errors method): one row per (trial "
    "attempt, phase, table), before the dialog and after it.",
    (
        *_TRIAL_KEY,
        _c("phase", pa.string(), " / ".join(SNAPSHOT_PHASES) + "."),
        _c("table_name", pa.string(), "The table."),
        _c("key_columns", pa.list_(pa.string()), "Its primary-key columns (rows are ordered "
           "by them)."),
        _c("rows_json", pa.string(), "Every row, as a JSON list of objects."),
        _c("sha256", pa.string(), "Hash of rows_json."),
    ),
)

DIAGNOSTICS = Table(
    "diagnostics",
    "Diagnostic metrics chosen in advance (the three-errors method), one row per (trial "
    "attempt, metric): whether the agent read the state before acting, after a fault, before "
    "answering.",
    (
        *_TRIAL_KEY,
        _c("name", pa.string(), "read_before_write / read_after_fault / read_before_answer."),
        _c("value", pa.bool_(), "The metric; null when it does not apply (no write, no "
           "fault).", nullable=True),
        _c("required", pa.bool_(), "The scenario requires it (then it is also a check)."),
    ),
)

JudgeVerdict = Literal["pass", "fail", "error"]
"""Closed set of one judgment's verdicts. ``error``: the judge failed (its reply was not the
JSON the rubric asks for, or the call failed past its retries): never a pass or a fail."""
JUDGE_VERDICTS: tuple[JudgeVerdict, ...] = get_args(JudgeVerdict)

JUDGMENTS = Table(
    "judgments",
    "An LLM judge's verdict on one trial attempt (the three-errors method; docs/judge.md), "
    "one row per (trial attempt, judge model, rubric id, rubric version and hash, repeat). A "
    "separate signal: it "
    "never changes trials.passed; its usage and cost are never added to the trial's.",
    (
        *_TRIAL_KEY,
        _c("judgment_id", pa.string(), "Unique id of the `judge run` invocation that wrote the "
           "row (a later one over the same key supersedes it in the view)."),
        _c("judged_at", _TS, "When the `judge run` that made it started (the same for all "
           "its rows)."),
        _c("judge_model", pa.string(), "The judge model as named (e.g. local/default)."),
        _c("judge_model_version", pa.string(), "Model version the judge's provider reported "
           "(local models: the GGUF's sha256).", nullable=True),
        _c("judge_generation_params", pa.string(), "The judge's generation params as "
           "canonical JSON."),
        _c("rubric_id", pa.string(), "The rubric's id (its header)."),
        _c("rubric_version", pa.int32(), "The rubric's version (its header)."),
        _c("rubric_sha256", pa.string(), "Hash of the rubric file's bytes."),
        _c("repeat", pa.int32(), "Repeat of the judgment, 0-based."),
        _c("evidence_fields", pa.list_(pa.string()), "What the judge was shown, in order "
           "(request / expected_outcome / before / after / tool_calls / answer)."),
        _c("evidence_sha256", pa.string(), "Hash of the evidence text as sent."),
        _c("verdict", pa.string(), " / ".join(JUDGE_VERDICTS) + "."),
        _c("reason", pa.string(), "The judge's reason; for an error, what went wrong."),
        _c("error_kind", pa.string(), "For an error: invalid_reply (not the JSON asked for) or "
           "the closed infrastructure error kind of the failed call.", nullable=True),
        _c("raw_reply", pa.string(), "The judge's reply as sent (first 2000 characters).",
           nullable=True),
        _c("calls", pa.int32(), "Judge calls made for this judgment (retries included)."),
        _c("input_tokens", pa.int64(), "Prompt tokens of the answered call; null when not "
           "reported.", nullable=True),
        _c("output_tokens", pa.int64(), "Completion tokens of the answered call; null when not "
           "reported.", nullable=True),
        _c("cost_usd", pa.float64(), "Reported cost of the judge's calls; null when not "
           "reported (never 0 for unknown). Never part of trials.cost_usd.", nullable=True),
        _c("latency_ms", pa.float64(), "Latency of the answered call.", nullable=True),
    ),
)

TABLES: dict[str, Table] = {
    t.name: t for t in (RUNS, TRIALS, EVENTS, CHECKS, ATTEMPTS, COMPARISONS, CONDITION_TRIALS,
                        SNAPSHOTS, DIAGNOSTICS, JUDGMENTS)
}


def describe() -> dict[str, Any]:
    """A JSON-able description of every table; the golden file is this, pretty-printed."""
    return {
        "schema_version": SCHEMA_VERSION,
        "tables": {
            t.name: {
                "doc": t.doc,
                "columns": [
                    {"name": c.name, "type": str(c.type), "nullable": c.nullable, "doc": c.doc}
                    for c in t.columns
                ],
            }
            for t in TABLES.values()
        },
    }


def describe_json() -> str:
    return json.dumps(describe(), indent=2, ensure_ascii=False) + "\n"
