"""One trial's doors for an external agent: its model calls and its tool calls, recorded.

A ``Door`` is what the gateway (``pipeline.trial.external.gateway``) finds behind a trial's
URL. A model call goes through the trial's own model client (the grid cell's model, whatever
name the agent asked for: limits, faults, the spend cap, retries and usage as for the built-in
agent's calls), in the trial thread's context (its call gate); a tool call goes through the
trial's sandbox. Both are recorded in the trace exactly as the built-in agent records them. The
first failure that is not the agent's own (infrastructure, configuration) is kept: the trial
ends with it whatever the agent made of the error it was given.
"""

from __future__ import annotations

import contextvars
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any, NoReturn

from pipeline.environment.sandbox import Sandbox
from pipeline.errors import AgentError, ConfigError, InfraError
from pipeline.models.client import ModelClient, ModelReply, ToolCallRequest
from pipeline.models.routes import AgentAdaptation
from pipeline.trace import Nudge, Trace
from pipeline.trial.agent import TRUNCATED, record_reply, record_usage, sandbox_call

TrialFailure = AgentError | InfraError | ConfigError


class Refusal(Exception):
    """A request the door answers with an HTTP error (status, OpenAI-style error type)."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind


def _canonical(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments or "{}"), sort_keys=True, ensure_ascii=False)
    except json.JSONDecodeError:
        return arguments


@dataclass
class Door:
    """A trial's model and tools, as an external agent reaches them."""

    model: ModelClient
    model_name: str
    sandbox: Sandbox
    trace: Trace
    step_limit: int
    adaptation: AgentAdaptation | None = None
    """The model route's adaptation (the bundled local model's), as the built-in agent uses it."""
    token: str = field(default_factory=lambda: secrets.token_hex(16))
    key: str = field(default_factory=lambda: "sk-agentsweep-" + secrets.token_hex(16))
    context: contextvars.Context = field(default_factory=contextvars.copy_context)
    """The trial thread's context (its call gate), where every model call runs."""
    turn: int = 0
    steps: int = 0
    """Model calls in this turn so far."""
    failure: TrialFailure | None = None
    closed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)
    _requested: list[tuple[int, ToolCallRequest]] = field(default_factory=list)
    _bridge_ids: int = 0
    _in_flight: int = 0
    _busy_since: float = 0.0
    _model_s: float = 0.0

    @property
    def alias(self) -> str:
        """The model name the agent is told to ask for (any other name gets the same model)."""
        return f"agentsweep-{self.token[:12]}"

    def begin_turn(self, turn: int) -> None:
        with self.lock:
            self.turn, self.steps, self._requested = turn, 0, []

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 response_schema: dict[str, Any] | None) -> ModelReply:
        """One planner call of the agent, through the trial's model client, recorded. The
        model route's adaptation applies as for the built-in agent: its system note, and its
        one nudge after an empty reply to a tool result (recorded as a ``nudge`` event)."""
        with self.lock:
            self._usable()
            turn, step = self.turn, self.steps
            if step >= self.step_limit:
                self._fail(AgentError("step_limit", f"turn {turn}: more than {self.step_limit} "
                                      "model calls in one turn", turn))
            self.steps += 1
        messages = self._adapted(messages)
        reply = self._model_call(messages, tools, response_schema, turn, step)
        nudge = self.adaptation.nudge if self.adaptation is not None else None
        if (nudge is not None and _empty(reply) and messages
                and messages[-1].get("role") == "tool"):
            with self.lock:
                self.trace.add(Nudge(turn=turn, step=step, content=nudge))
            reply = self._model_call([*messages, {"role": "system", "content": nudge}], tools,
                                     response_schema, turn, step)
        with self.lock:
            self._requested = [(step, call) for call in reply.tool_calls]
        return reply

    def _model_call(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                    response_schema: dict[str, Any] | None, turn: int, step: int) -> ModelReply:
        """One call of the trial's client in the trial thread's context, timed and recorded."""
        with self.lock:
            if self._in_flight == 0:
                self._busy_since = time.monotonic()
            self._in_flight += 1
        try:
            reply = self.context.copy().run(self.model.complete, messages, tools or None,
                                            "planner", turn, response_schema)
        except (AgentError, InfraError, ConfigError) as exc:
            with self.lock:
                self._fail(exc)
        finally:
            with self.lock:
                self._in_flight -= 1
                if self._in_flight == 0:
                    self._model_s += time.monotonic() - self._busy_since
        with self.lock:
            record_usage(self.trace, reply)
            record_reply(self.trace, turn, step, reply)
        return reply

    def _adapted(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The messages with the route's system note at the end of the first system message
        (a system message of its own when there is none)."""
        note = self.adaptation.system_note if self.adaptation is not None else None
        if note is None:
            return messages
        first = messages[0] if messages else {}
        if first.get("role") in ("system", "developer") and isinstance(first.get("content"), str):
            return [{**first, "content": f"{first['content']}\n\n{note}"}, *messages[1:]]
        return [{"role": "system", "content": note}, *messages]

    def model_seconds(self) -> float:
        """Wall time during which at least one of the agent's model calls was in flight (the
        provider's and the queue's time, not the agent's)."""
        with self.lock:
            running = time.monotonic() - self._busy_since if self._in_flight else 0.0
            return self._model_s + running

    def call_tool(self, name: str, arguments: dict[str, Any] | str,
                  call_id: str | None = None) -> str:
        """One tool call through the trial's sandbox, recorded; the result as JSON text. A
        call the last model reply asked for keeps that reply's step and call id."""
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments,
                                                                      ensure_ascii=False)
        with self.lock:
            self._usable()
            step, call = self._match(name, raw, call_id)
            return sandbox_call(self.sandbox, self.trace, self.turn, step, call)

    def reply_recorded(self, turn: int) -> str | None:
        """The last non-empty model text of ``turn`` (what the journal takes as its reply)."""
        from pipeline.trace import AssistantMessage

        with self.lock:
            texts = [e.content for e in self.trace.events if isinstance(e, AssistantMessage)
                     and e.turn == turn and (e.content or "").strip()]
        return texts[-1] if texts else None

    def harness_failure(self, message: str) -> None:
        """Our own code failed serving the agent: the trial stays incomplete."""
        with self.lock:
            if self.failure is None:
                self.failure = InfraError("harness_error", message)

    def close(self) -> None:
        with self.lock:
            self.closed = True

    def _match(self, name: str, raw: str, call_id: str | None) -> tuple[int, ToolCallRequest]:
        wanted = _canonical(raw)
        for index, (step, call) in enumerate(self._requested):
            if call.name == name and (call.id == call_id or _canonical(call.arguments) == wanted):
                del self._requested[index]
                return step, ToolCallRequest(call.id, name, raw)
        self._bridge_ids += 1
        step = max(self.steps - 1, 0)
        return step, ToolCallRequest(call_id or f"bridge-{self._bridge_ids}", name, raw)

    def _usable(self) -> None:
        if self.closed:
            raise Refusal(410, "trial_closed", "this trial has ended")
        if self.failure is not None:
            raise _refusal(self.failure)

    def _fail(self, failure: TrialFailure) -> NoReturn:
        if self.failure is None:
            self.failure = failure
        raise _refusal(failure)


def _empty(reply: ModelReply) -> bool:
    """Neither text nor a tool call, and not cut off at the token limit."""
    return (not reply.tool_calls and not (reply.content or "").strip()
            and reply.finish_reason != TRUNCATED)


def _refusal(failure: TrialFailure) -> Refusal:
    """How the agent is told: infrastructure as a 503 (429 for a rate limit), the rest 400."""
    message = str(failure)
    if isinstance(failure, InfraError):
        status = 429 if failure.kind == "rate_limit" else 503
        return Refusal(status, failure.kind, message)
    if isinstance(failure, ConfigError):
        return Refusal(400, "config_error", message)
    return Refusal(400, failure.kind, message)
