"""Run one trial: build the sandbox and agent, play the dialog, score it, make warehouse rows.

``run_trial`` never swallows a harness bug: only the closed error kinds (AgentError, InfraError)
become outcomes; anything else propagates and the executor records it as a harness error
(the trial stays incomplete, never an agent failure). A check that raises is no harness error:
scoring records it as a ``check_error`` row and the trial ends complete with an unknown verdict
(``pipeline.scoring.failures``), so the paid dialog is kept and never re-run.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from pipeline.catalog import Domain, load_domain
from pipeline.environment.database import changed_only
from pipeline.environment.expected_state import expected_database
from pipeline.environment.sandbox import Sandbox
from pipeline.errors import CONFIG_ERROR, LIMIT_KINDS, AgentError, ConfigError, InfraError
from pipeline.models.call_params import call_params_of
from pipeline.models.channels import access_channel
from pipeline.models.client import CallPurpose, LiteLLMClient, ModelClient, ModelReply
from pipeline.models.config import ModelConfig
from pipeline.models.providers import provider_for, resolve_route
from pipeline.scoring import CheckResult, TrialScoring, score_trial
from pipeline.trace import Event, Trace
from pipeline.trial.agent import Agent, UserTurn
from pipeline.trial.database_rows import diagnostic_rows, snapshot_rows
from pipeline.trial.external.play import play as play_external
from pipeline.trial.memory import memory_for
from pipeline.trial.rows import condition_row
from pipeline.trial.spec import TrialSpec
from pipeline.user.prompt import PROMPT_SHA256 as USER_PROMPT_SHA256
from pipeline.user.simulator import UserSimulator
from pipeline.util.hashing import canonical_json
from pipeline.util.redact import redact
from warehouse.rows import (
    CheckRow,
    ConditionTrialRow,
    DiagnosticRow,
    SnapshotRow,
    TrialKey,
    TrialRow,
    TrialScoreColumns,
    shallow_dict,
)
from warehouse.schema import TrialStatus


@dataclass(frozen=True)
class RunContext:
    run_id: str
    code_version: str


@dataclass(frozen=True)
class TrialResult:
    """One attempt of a trial, as the warehouse will hold it."""

    trial: TrialRow
    events: tuple[Event, ...] = ()
    checks: tuple[CheckResult, ...] = ()
    condition: ConditionTrialRow | None = None
    """A condition task's outcome (the unstated-conditions method), when the scenario is one."""
    snapshots: tuple[SnapshotRow, ...] = ()
    """A database domain's database before and after the dialog (the three-errors method)."""
    diagnostics: tuple[DiagnosticRow, ...] = ()
    user_provider_failure: str | None = field(default=None, compare=False)
    """How the user simulator's provider failed (a ``simulator_error`` trial), for its circuit
    breaker; not stored (the error message says it)."""

    @property
    def status(self) -> TrialStatus:
        return self.trial.status

    def tables(self) -> dict[str, list[dict[str, Any]]]:
        """The attempt's rows by table, for the warehouse writer."""
        key = TrialKey(run_id=self.trial.run_id, trial_id=self.trial.trial_id,
                       attempt_id=self.trial.attempt_id).as_dict()
        return {
            "trials": [self.trial.as_dict()],
            "events": [{**key, **e.row()} for e in self.events],
            "checks": [CheckRow(**key, **shallow_dict(c), check_version=c.version).as_dict()
                       for c in self.checks],
            "condition_trials": [self.condition.as_dict()] if self.condition else [],
            "snapshots": [r.as_dict() for r in self.snapshots],
            "diagnostics": [r.as_dict() for r in self.diagnostics],
        }


def tables_of(results: Iterable[TrialResult]) -> dict[str, list[dict[str, Any]]]:
    """The rows of many attempts by table."""
    out: dict[str, list[dict[str, Any]]] = {"trials": [], "events": [], "checks": [],
                                            "condition_trials": [], "snapshots": [],
                                            "diagnostics": []}
    for result in results:
        for table, rows in result.tables().items():
            out[table] += rows
    return out


def model_client_for(spec: TrialSpec, model: ModelConfig | None = None) -> ModelClient:
    """The trial's model client (or ``model``'s: the user simulator's): the model's provider
    adds its per-trial call options (looked up by name, never special-cased here), then the
    sweep's (``spec.extra``: the agent model's node endpoint and call options, so only for
    that model; another model, the simulator's, gets its own call options: api_base,
    timeout)."""
    model = model or spec.model
    route = model.route or resolve_route(model.name)
    domain = load_domain(spec.scenario.domain, spec.domain_path)
    params = provider_for(model.name).trial_params(route, spec.scenario, domain)
    extra = spec.extra if model.name == spec.model.name else call_params_of(model)
    return LiteLLMClient(model, {**params, **extra})


def _simulator(spec: TrialSpec, client: ModelClient | None) -> UserSimulator | None:
    """The trial's simulated user, when the scenario has one and the sweep names its model."""
    user = spec.scenario.user
    if user is None or (spec.user_model is None and client is None):
        return None
    model = client or model_client_for(spec, spec.user_model)
    return UserSimulator(model if spec.deadline_s is None else
                         DeadlineClient(model, spec.deadline_s), user.instructions,
                         spec.user_max_turns)


@dataclass
class DeadlineClient:
    """A model client that refuses to start a call once the trial's deadline has passed."""

    inner: ModelClient
    deadline_s: float
    started: float = field(default_factory=time.monotonic)

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 purpose: CallPurpose = "planner", turn: int = 0,
                 response_schema: dict[str, Any] | None = None) -> ModelReply:
        if time.monotonic() - self.started > self.deadline_s:
            raise InfraError("timeout", f"the trial's deadline of {self.deadline_s:g} s passed "
                                        f"before a {purpose} call at turn {turn}")
        return self.inner.complete(messages, tools, purpose, turn, response_schema)


def run_trial(spec: TrialSpec, ctx: RunContext, node_id: str | None = None,
              client: ModelClient | None = None,
              user_client: ModelClient | None = None) -> TrialResult:
    domain = load_domain(spec.scenario.domain, spec.domain_path)
    case = spec.scenario.case
    database = spec.scenario.database
    sandbox = Sandbox(domain, spec.tools, case.recorded if case is not None else (),
                      spec.scenario.state_changes, database)
    model = client or model_client_for(spec)
    planner = model if spec.deadline_s is None else DeadlineClient(model, spec.deadline_s)
    step_limit = max(spec.step_limit, spec.scenario.step_limit or 0)
    trace = Trace()
    before = sandbox.snapshot()
    if before is not None:
        trace.snapshots["before"] = before
    started = datetime.now(UTC)
    status: TrialStatus = "complete"
    error_kind: str | None = None
    error_message: str | None = None
    user_provider_failure: str | None = None
    try:
        simulator = _simulator(spec, user_client)
        turns = [UserTurn(t.user, t.if_refused) for t in spec.scenario.turns]
        if not spec.agent.builtin:
            play_external(spec, planner, sandbox, step_limit, trace, turns, simulator)
        else:
            agent = Agent(
                model=planner, system_prompt=spec.prompt.text, tools=domain.openai_tools(),
                sandbox=sandbox, step_limit=step_limit,
                memory=memory_for(spec.memory_mode, domain, spec.prompt.text),
                adaptation=(spec.model.route or resolve_route(spec.model.name)).agent_adaptation)
            if simulator is not None:
                agent.run_simulated(simulator, trace)
            else:
                agent.run(turns, trace)
    except AgentError as exc:
        status = "limit" if exc.kind in LIMIT_KINDS else "agent_error"
        error_kind, error_message = exc.kind, redact(str(exc))
        trace.ended_by = exc.kind
    except InfraError as exc:
        status, error_kind, error_message = "incomplete", exc.kind, redact(str(exc))
        user_provider_failure = exc.provider_kind
    except ConfigError as exc:
        status, error_kind, error_message = "incomplete", CONFIG_ERROR, redact(str(exc))
    outcome = _Outcome(status, error_kind, error_message, started, datetime.now(UTC))
    after = sandbox.snapshot()
    if after is not None:
        trace.snapshots["after"] = after
    _expected_snapshots(trace, spec, domain)
    if status == "incomplete":
        return replace(_result(spec, ctx, trace, None, outcome, node_id),
                       user_provider_failure=user_provider_failure)
    scoring = score_trial(trace, spec.scenario, spec.memory_mode, domain)
    return _result(spec, ctx, trace, scoring, outcome, node_id)


def _expected_snapshots(trace: Trace, spec: TrialSpec, domain: Domain) -> None:
    """A golden-replay scenario's expected database (phase ``expected``); a large database's
    snapshots cut down to the rows that differ between the phases."""
    rules = spec.scenario.database
    if rules is None or not trace.snapshots:
        return
    if rules.expected.golden:
        trace.snapshots["expected"] = expected_database(domain, spec.scenario)
    if rules.snapshots == "changed":
        trace.snapshots = changed_only(trace.snapshots)


@dataclass(frozen=True)
class _Outcome:
    status: TrialStatus
    error_kind: str | None
    error_message: str | None
    started: datetime
    finished: datetime


def _result(spec: TrialSpec, ctx: RunContext, trace: Trace, scoring: TrialScoring | None,
            outcome: _Outcome, node_id: str | None) -> TrialResult:
    usage = trace.usage.reported()
    user_usage = trace.user_usage.reported()
    simulated = spec.user_model is not None and spec.scenario.user is not None
    scores = TrialScoreColumns(**scoring.scores.row()) if scoring is not None else None
    trial = TrialRow(
        run_id=ctx.run_id, trial_id=spec.trial_id, attempt_id=uuid.uuid4().hex,
        scenario_id=spec.scenario.id,
        scenario_version=spec.scenario.version,
        scenario_sha256=spec.scenario_sha256,
        scenario_class=spec.scenario.scenario_class,
        suite_id=spec.suite_id,
        suite_sha256=spec.suite_sha256,
        domain=spec.scenario.domain,
        model=spec.model.name,
        provider=spec.model.provider,
        access_channel=access_channel(spec.model.name, spec.model.api_base),
        model_version=usage.model_version,
        system_fingerprint=usage.system_fingerprint,
        temperature=spec.model.temperature,
        generation_params=canonical_json(spec.model.generation_params()),
        seed=spec.model.seed,
        prompt_id=spec.prompt.id,
        prompt_sha256=spec.prompt.sha256,
        tools_sha256=spec.tools_sha256,
        memory_mode=spec.memory_mode,
        repeat=spec.repeat,
        status=outcome.status,
        passed=scoring.passed if scoring is not None else None,
        error_kind=outcome.error_kind,
        error_message=outcome.error_message,
        **(scores.as_dict() if scores is not None else {}),
        turns=trace.turns_played,
        model_calls=usage.model_calls,
        tool_calls=len(trace.tool_calls()),
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cost_usd=usage.cost_usd,
        latency_ms=(outcome.finished - outcome.started).total_seconds() * 1000,
        started_at=outcome.started,
        finished_at=outcome.finished,
        code_version=ctx.code_version,
        node_id=node_id,
        user_model=spec.user_model.name if simulated and spec.user_model else None,
        user_prompt_sha256=USER_PROMPT_SHA256 if simulated else None,
        user_model_calls=user_usage.model_calls if simulated else None,
        user_input_tokens=user_usage.input_tokens if simulated else None,
        user_output_tokens=user_usage.output_tokens if simulated else None,
        user_cost_usd=user_usage.cost_usd if simulated else None,
        reward_basis=list(spec.scenario.reward_basis) or None,
        nl_assertions=len(spec.scenario.nl_assertions) or None,
        agent=spec.agent.name,
        agent_version=spec.agent.version,
        agent_sha256=spec.agent.code_sha256,
    )
    key = TrialKey(run_id=trial.run_id, trial_id=trial.trial_id, attempt_id=trial.attempt_id)
    condition, diagnostics = _method_rows(spec, key, scoring)
    return TrialResult(trial, tuple(trace.events),
                       scoring.checks if scoring is not None else (), condition,
                       tuple(snapshot_rows(key, trace.snapshots)), tuple(diagnostics))


def _method_rows(spec: TrialSpec, key: TrialKey, scoring: TrialScoring | None
                 ) -> tuple[ConditionTrialRow | None, list[DiagnosticRow]]:
    """A condition task's row (the unstated-conditions method) and a database scenario's
    diagnostics (the three-errors method)."""
    if scoring is None:
        return None, []
    rules, database = spec.scenario.condition, spec.scenario.database
    condition = (condition_row(key, spec.scenario.id, rules, scoring.condition)
                 if scoring.condition is not None and rules is not None else None)
    diagnostics = (diagnostic_rows(key, database, scoring.diagnostics)
                   if scoring.diagnostics is not None and database is not None else [])
    return condition, diagnostics


def harness_failure(spec: TrialSpec, ctx: RunContext, message: str,
                    node_id: str | None = None) -> TrialResult:
    """The row for a trial whose execution crashed in our code or its worker died."""
    now = datetime.now(UTC)
    outcome = _Outcome("incomplete", "harness_error", redact(message)[:2000], now, now)
    return _result(spec, ctx, Trace(), None, outcome, node_id)
