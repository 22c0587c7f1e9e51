"""Typed rows of the warehouse tables: one frozen dataclass per table, its fields the table's
columns (``schema_version`` aside: the writer stamps it). ``tests/unit/warehouse/test_schema.py``
compares each
with its table, so a column added on one side only fails there."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from warehouse.schema import (
    AccessChannel,
    AttemptOutcome,
    JudgeVerdict,
    TransitionClass,
    TrialStatus,
    Verdict,
)

_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def field_names(cls: type) -> tuple[str, ...]:
    """A dataclass's field names, found once per class (``dataclasses.fields`` builds its
    tuple anew on every call: a row per event made it a tenth of the driver's time)."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(cls))
    return names


def shallow_dict(value: Any) -> dict[str, Any]:
    """A dataclass instance's fields by name, values shared, not copied (``dataclasses.asdict``
    deep-copies every list and map: a quarter of the driver's time in a fast sweep)."""
    return {name: getattr(value, name) for name in field_names(type(value))}


@dataclass(frozen=True, kw_only=True)
class _Row:
    def as_dict(self) -> dict[str, Any]:
        """The row's columns, values shared, not copied (``shallow_dict``). A row is frozen
        and its values are never changed in place."""
        return shallow_dict(self)


@dataclass(frozen=True, kw_only=True)
class RunRow(_Row):
    """A row of ``runs``: one invocation of a sweep (written at its start and its end)."""

    run_id: str
    invocation_id: str
    started_at: datetime
    finished_at: datetime | None
    code_version: str
    suite_ids: list[str]
    suite_sha256s: list[str]
    models: list[str]
    memory_modes: list[str]
    repeats: int
    grid_size: int
    trials_run: int
    ray_address: str | None
    argv: str
    config_json: str | None


@dataclass(frozen=True, kw_only=True)
class TrialKey(_Row):
    run_id: str
    trial_id: str
    attempt_id: str


@dataclass(frozen=True, kw_only=True)
class TrialScoreColumns(_Row):
    """The scoring columns of a trial row (null for an incomplete trial)."""

    score_state: int | None = None
    score_invalidation: int | None = None
    score_function: int | None = None
    score_arguments: int | None = None
    score_response: int | None = None
    vetoed: bool | None = None
    first_violation_turn: int | None = None
    first_violation_step: int | None = None
    first_violation_check: str | None = None
    steps_to_correct_continuation: int | None = None
    repeated_searches: int | None = None
    forbidden_calls_attempted: int | None = None
    clarification_questions: int | None = None
    failure_origin: str | None = None


@dataclass(frozen=True, kw_only=True)
class TrialRow(TrialScoreColumns, TrialKey):
    """A row of ``trials``: a trial's identity, provenance, outcome, scores and usage."""

    scenario_id: str
    scenario_version: int
    scenario_sha256: str
    scenario_class: str
    suite_id: str
    suite_sha256: str
    domain: str
    model: str
    provider: str
    access_channel: AccessChannel | None
    model_version: str | None
    system_fingerprint: str | None
    temperature: float
    generation_params: str
    seed: int | None
    prompt_id: str
    prompt_sha256: str
    tools_sha256: str
    memory_mode: str
    repeat: int
    status: TrialStatus
    passed: bool | None
    error_kind: str | None
    error_message: str | None
    turns: int
    model_calls: int
    tool_calls: int
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    latency_ms: float
    started_at: datetime
    finished_at: datetime
    code_version: str
    node_id: str | None
    user_model: str | None = None
    user_prompt_sha256: str | None = None
    user_model_calls: int | None = None
    user_input_tokens: int | None = None
    user_output_tokens: int | None = None
    user_cost_usd: float | None = None
    reward_basis: list[str] | None = None
    nl_assertions: int | None = None
    agent: str | None = None
    agent_version: str | None = None
    agent_sha256: str | None = None


@dataclass(frozen=True, kw_only=True)
class CheckRow(TrialKey):
    """A row of ``checks``: one check's verdict on one trial, with its logic's version."""

    check_id: str
    check_kind: str
    score: str | None
    passed: bool
    turn: int | None
    step: int | None
    detail: str
    check_version: int | None
    counted: bool | None = True


@dataclass(frozen=True, kw_only=True)
class AttemptRow(TrialKey):
    """A row of ``attempts``: one execution attempt of a trial."""

    attempt: int
    outcome: AttemptOutcome
    error_kind: str | None
    message: str | None
    node_id: str | None
    started_at: datetime
    finished_at: datetime
    retry_delay_s: float | None


@dataclass(frozen=True, kw_only=True)
class ComparisonRow(_Row):
    """A row of ``comparisons``: one paired cell of a comparison, with its decision."""

    run_id: str
    comparison_id: str
    baseline_run_id: str
    compared_at: datetime
    scenario_id: str
    prompt_id: str
    memory_mode: str
    baseline_model: str
    candidate_model: str
    critical: bool
    baseline_k: int
    baseline_n: int
    candidate_k: int
    candidate_n: int
    transition: TransitionClass
    baseline_sha256: str
    candidate_sha256: str
    expectation_changed: bool
    reviewed: bool | None
    verdict: Verdict
    reasons: list[str]
    pass_rate_delta: float | None
    interval_low: float | None
    interval_high: float | None
    confidence: float
    resamples: int
    seed: int


@dataclass(frozen=True, kw_only=True)
class ConditionTrialRow(TrialKey):
    """A row of ``condition_trials``: a condition task's trial, what was done and said."""

    scenario_id: str
    pair_id: str
    condition_id: str
    condition_type: str
    tool: str
    enforced: str
    stated: str
    changed_field: str
    role: str
    format: str
    outcome: str
    report: str | None
    reply: str | None
    read_first: bool | None
    repeat_played: bool
    repeat_outcome: str | None
    repeat_report: str | None
    repeat_reply: str | None


@dataclass(frozen=True, kw_only=True)
class SnapshotRow(TrialKey):
    """A row of ``snapshots``: one table of a trial's database before or after the dialog."""

    phase: str
    table_name: str
    key_columns: list[str]
    rows_json: str
    sha256: str


@dataclass(frozen=True, kw_only=True)
class DiagnosticRow(TrialKey):
    """A row of ``diagnostics``: one metric chosen in advance, for one trial."""

    name: str
    value: bool | None
    required: bool


@dataclass(frozen=True, kw_only=True)
class JudgmentRow(TrialKey):
    """A row of ``judgments``: one repeat of an LLM judge's verdict on one trial attempt."""

    judgment_id: str
    judged_at: datetime
    judge_model: str
    judge_model_version: str | None
    judge_generation_params: str
    rubric_id: str
    rubric_version: int
    rubric_sha256: str
    repeat: int
    evidence_fields: list[str]
    evidence_sha256: str
    verdict: JudgeVerdict
    reason: str
    error_kind: str | None
    raw_reply: str | None
    calls: int
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    latency_ms: float | None
