"""Run one trial: build the sandbox and agent, play the dialog, score it, make warehouse rows.

``run_trial`` never swallows a harness bug: only the closed error kinds (AgentError, InfraError)
become outcomes; anything else propagates and the executor records it as a harness error
(the trial stays incomplete, never an agent failure).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pipeline.agent import Agent
from pipeline.catalog import load_domain
from pipeline.checks import CHECK_VERSIONS, CheckResult, score
from pipeline.errors import CONFIG_ERROR, LIMIT_KINDS, AgentError, ConfigError, InfraError
from pipeline.grid import TrialSpec
from pipeline.hashing import canonical_json
from pipeline.llm import CallPurpose, LiteLLMClient, ModelClient, ModelReply
from pipeline.memory import memory_for
from pipeline.providers import provider_for, resolve_route
from pipeline.redact import redact
from pipeline.sandbox import Sandbox
from pipeline.scoring import TrialScores, summarize_trial
from pipeline.trace import Trace


@dataclass(frozen=True)
class RunContext:
    run_id: str
    code_version: str


@dataclass
class TrialResult:
    trial: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)
    checks: list[dict[str, Any]] = field(default_factory=list)

    @property
    def status(self) -> str:
        return str(self.trial["status"])


def model_client_for(spec: TrialSpec) -> ModelClient:
    """The trial's model client: the model's provider adds its per-trial call options (looked
    up by name, never special-cased here), then the sweep's (``spec.extra``)."""
    route = spec.model.route or resolve_route(spec.model.name)
    params = provider_for(spec.model.name).trial_params(route, spec.scenario)
    return LiteLLMClient(spec.model, {**params, **spec.extra})


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
              client: ModelClient | None = None) -> TrialResult:
    domain = load_domain(spec.scenario.domain, spec.domain_path)
    sandbox = Sandbox(domain)
    model = client or model_client_for(spec)
    agent = Agent(
        model=model if spec.deadline_s is None else DeadlineClient(model, spec.deadline_s),
        system_prompt=spec.prompt.text,
        tools=domain.openai_tools(),
        sandbox=sandbox,
        step_limit=spec.step_limit,
        memory=memory_for(spec.memory_mode, domain, spec.prompt.text),
    )
    trace = Trace()
    started = datetime.now(UTC)
    status, error_message = "complete", None
    error_kind: str | None = None
    try:
        agent.run([t.user for t in spec.scenario.turns], trace)
    except AgentError as exc:
        status = "limit" if exc.kind in LIMIT_KINDS else "agent_error"
        error_kind, error_message = exc.kind, redact(str(exc))
    except InfraError as exc:
        status, error_kind, error_message = "incomplete", exc.kind, redact(str(exc))
    except ConfigError as exc:
        status, error_kind, error_message = "incomplete", CONFIG_ERROR, redact(str(exc))
    finished = datetime.now(UTC)
    if status == "incomplete":
        return _rows(spec, ctx, trace, [], None, status, None, error_kind, error_message,
                     started, finished, node_id)
    checks = score(trace.events, spec.scenario, spec.memory_mode,
                   error_kind if status in ("agent_error", "limit") else None, domain)
    scores = summarize_trial(trace.events, spec.scenario, domain, checks, spec.memory_mode)
    passed = _passed(status, checks)
    return _rows(spec, ctx, trace, checks, scores, status, passed, error_kind, error_message,
                 started, finished, node_id)


def _passed(status: str, checks: list[CheckResult]) -> bool | None:
    if status == "incomplete":
        return None
    if status != "complete":
        return False
    return all(c.passed for c in checks)


def _rows(spec: TrialSpec, ctx: RunContext, trace: Trace, checks: list[CheckResult],
          scores: TrialScores | None, status: str, passed: bool | None, error_kind: str | None,
          error_message: str | None, started: datetime, finished: datetime,
          node_id: str | None) -> TrialResult:
    attempt_id = uuid.uuid4().hex
    key = {"run_id": ctx.run_id, "trial_id": spec.trial_id, "attempt_id": attempt_id}
    usage = trace.usage.reported()
    trial = {
        **key,
        "scenario_id": spec.scenario.id,
        "scenario_version": spec.scenario.version,
        "scenario_sha256": spec.scenario_sha256,
        "scenario_class": spec.scenario.scenario_class,
        "suite_id": spec.suite_id,
        "suite_sha256": spec.suite_sha256,
        "domain": spec.scenario.domain,
        "model": spec.model.name,
        "provider": spec.model.provider,
        "model_version": usage.model_version,
        "system_fingerprint": usage.system_fingerprint,
        "temperature": spec.model.temperature,
        "generation_params": canonical_json(spec.model.generation_params()),
        "seed": spec.model.seed,
        "prompt_id": spec.prompt.id,
        "prompt_sha256": spec.prompt.sha256,
        "tools_sha256": spec.tools_sha256,
        "memory_mode": spec.memory_mode,
        "repeat": spec.repeat,
        "status": status,
        "passed": passed,
        "error_kind": error_kind,
        "error_message": error_message,
        **(scores.row() if scores is not None else {}),
        "turns": trace.turns_played,
        "model_calls": usage.model_calls,
        "tool_calls": len(trace.tool_calls()),
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cost_usd": usage.cost_usd,
        "latency_ms": (finished - started).total_seconds() * 1000,
        "started_at": started,
        "finished_at": finished,
        "code_version": ctx.code_version,
        "node_id": node_id,
    }
    events = [{**key, **e.row()} for e in trace.events]
    check_rows = [{**key, **c.__dict__, "check_version": CHECK_VERSIONS[c.check_kind]}
                  for c in checks]
    return TrialResult(trial, events, check_rows)


def harness_failure(spec: TrialSpec, ctx: RunContext, message: str,
                    node_id: str | None = None) -> TrialResult:
    """The row for a trial whose execution crashed in our code or its worker died."""
    now = datetime.now(UTC)
    return _rows(spec, ctx, Trace(), [], None, "incomplete", None, "harness_error",
                 redact(message)[:2000], now, now, node_id)
