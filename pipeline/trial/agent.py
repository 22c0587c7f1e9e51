"""The built-in agent under test: system prompt + a model + the domain's tools + a memory mode.

Each user turn: (1) the memory folds in the user's message (one model call in summary and
structured modes; in structured mode the new state is validated and committed before anything
else happens); (2) the planner runs model steps until it answers without tool calls, at most
``step_limit`` steps. Every tool call goes through the memory's gate and then the trial's
sandbox. The agent does no scoring and no I/O of its own.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from pipeline.environment.sandbox import Sandbox
from pipeline.errors import AgentError
from pipeline.models.client import ModelClient, ModelReply, ToolCallRequest
from pipeline.models.routes import AgentAdaptation
from pipeline.trace import (
    BLOCKED,
    AssistantMessage,
    MemoryUpdate,
    Nudge,
    ToolCall,
    ToolResult,
    Trace,
    UserMessage,
)
from pipeline.trial.memory import ChatMemory, Memory
from pipeline.user.simulator import UserSimulator
from pipeline.util.redact import redact, redact_optional

LOOP_CALLS = 3
"""The same call (tool and arguments) this many times in one turn ends the trial: a loop."""
TRUNCATED = "length"
"""The finish_reason of a reply cut off at the token limit."""


@dataclass(frozen=True)
class UserTurn:
    """A user turn to play; ``if_refused``: played only when the previous turn attempted no
    call of that tool (from the trace's tool calls, never from the reply's text), and when it
    is not played the dialog ends there."""

    text: str
    if_refused: str | None = None


def refused(trace: Trace, turn: int, tool: str) -> bool:
    """Turn ``turn`` attempted no call of ``tool`` (blocked and refused calls are attempts)."""
    return not any(isinstance(e, ToolCall) and e.turn == turn and e.tool_name == tool
                   for e in trace.events)


def record_usage(trace: Trace, reply: ModelReply) -> None:
    trace.usage.add(reply.input_tokens, reply.output_tokens, reply.cost_usd,
                    reply.model_version, reply.system_fingerprint)


@dataclass
class Agent:
    model: ModelClient
    system_prompt: str
    tools: list[dict[str, Any]]
    sandbox: Sandbox
    step_limit: int = 8
    memory: Memory = field(default_factory=ChatMemory)
    adaptation: AgentAdaptation | None = None
    """The model route's adaptation (the bundled local models'); None: the dialog as is."""

    def run(self, user_turns: Sequence[str | UserTurn], trace: Trace) -> None:
        """Play the user turns in order, appending every event to ``trace``.

        Raises AgentError (counts against the agent) or InfraError (trial stays incomplete).
        """
        history: list[dict[str, Any]] = []
        for turn, item in enumerate(user_turns, start=1):
            user = item if isinstance(item, UserTurn) else UserTurn(item)
            if user.if_refused is not None and not refused(trace, turn - 1, user.if_refused):
                return
            self._user_turn(turn, UserMessage(turn=turn, content=redact(user.text)), user.text,
                            history, trace)

    def run_simulated(self, simulator: UserSimulator, trace: Trace) -> None:
        """A simulated user speaks each turn until it stops (its stop message is an event of
        its own, with no agent turn after it) or the turn cap is reached (``turn_limit``).

        Raises AgentError, or InfraError (``simulator_error``: never the agent's fault)."""
        history: list[dict[str, Any]] = []
        said: list[str] = []
        replies: list[str] = []
        for turn in range(1, simulator.max_turns + 1):
            utterance = simulator.speak(turn, replies, said)
            reply = utterance.reply
            trace.user_usage.add(reply.input_tokens, reply.output_tokens, reply.cost_usd,
                                 reply.model_version, reply.system_fingerprint)
            event = UserMessage(
                turn=turn, content=redact_optional(reply.content), simulated=True,
                input_tokens=reply.input_tokens, output_tokens=reply.output_tokens,
                cached_input_tokens=reply.cached_input_tokens, latency_ms=reply.latency_ms,
                finish_reason=reply.finish_reason)
            if utterance.stop:
                trace.add(event)
                return
            replies.append(self._user_turn(turn, event, utterance.text, history, trace))
            said.append(utterance.text)
        raise AgentError("turn_limit", f"the simulated user still spoke after "
                                       f"{simulator.max_turns} turns", simulator.max_turns)

    def respond(self, turn: int, text: str, history: list[dict[str, Any]],
                trace: Trace) -> str:
        """Play one user turn of a dialog kept by the caller (``history``); the final reply."""
        return self._user_turn(turn, UserMessage(turn=turn, content=redact(text)), text,
                               history, trace)

    def _user_turn(self, turn: int, event: UserMessage, text: str,
                   history: list[dict[str, Any]], trace: Trace) -> str:
        """Play one user turn (``event`` says it); the agent's final reply."""
        event.active_state_before = redact_optional(self.memory.snapshot())
        trace.add(event)
        trace.turns_played = turn
        self.memory.update(turn, text, history, self.model,
                           partial(self._record_memory, turn, trace))
        event.active_state_after = redact_optional(self.memory.snapshot())
        history.append({"role": "user", "content": text})
        return self._play_turn(turn, history, trace)

    def _record_memory(self, turn: int, trace: Trace, reply: ModelReply,
                       rejected: str | None) -> None:
        """A memory update call: the committed memory, or the rejected output and why."""
        record_usage(trace, reply)
        content = self.memory.snapshot() if rejected is None else reply.content
        trace.add(MemoryUpdate(
            turn=turn, content=redact_optional(content), state_revision=self.memory.revision,
            rejected=None if rejected is None else redact(rejected),
            input_tokens=reply.input_tokens, output_tokens=reply.output_tokens,
            cached_input_tokens=reply.cached_input_tokens, latency_ms=reply.latency_ms,
            finish_reason=reply.finish_reason))

    def _system(self) -> dict[str, Any]:
        notes = [self.memory.planner_note(),
                 self.adaptation.system_note if self.adaptation is not None else None]
        content = "\n\n".join([self.system_prompt, *(n for n in notes if n is not None)])
        return {"role": "system", "content": content}

    def _ask(self, turn: int, step: int, history: list[dict[str, Any]],
             trace: Trace) -> ModelReply:
        """One planner step's reply, recorded; an empty one is never put back into
        ``history``. After a tool result, an empty reply gets the adaptation's one nudge."""
        messages = [self._system(), *history]
        reply = self._planner_call(turn, step, messages, trace)
        nudge = self.adaptation.nudge if self.adaptation is not None else None
        if (nudge is not None and _empty(reply) and history
                and history[-1].get("role") == "tool"):
            trace.add(Nudge(turn=turn, step=step, content=nudge))
            reply = self._planner_call(turn, step, [*messages,
                                                    {"role": "system", "content": nudge}], trace)
        if not _empty(reply):
            history.append(reply.assistant_message())
        return reply

    def _planner_call(self, turn: int, step: int, messages: list[dict[str, Any]],
                      trace: Trace) -> ModelReply:
        reply = self.model.complete(messages, self.tools, purpose="planner", turn=turn)
        record_usage(trace, reply)
        self._record_reply(turn, step, reply, trace)
        return reply

    def _play_turn(self, turn: int, history: list[dict[str, Any]], trace: Trace) -> str:
        made: Counter[tuple[str, str]] = Counter()
        for step in range(self.step_limit):
            planned_revision = self.memory.revision
            reply = self._ask(turn, step, history, trace)
            if reply.finish_reason == TRUNCATED:
                raise AgentError("output_truncated", f"turn {turn} step {step}: the reply was "
                                 "cut off at the token limit", turn)
            if not reply.tool_calls:
                if not (reply.content or "").strip():
                    raise AgentError("empty_response",
                                     f"turn {turn} step {step}: no text and no tool call", turn)
                return reply.content or ""
            for call in reply.tool_calls:
                made[(call.name, _canonical_arguments(call.arguments))] += 1
                if made[(call.name, _canonical_arguments(call.arguments))] >= LOOP_CALLS:
                    raise AgentError("tool_loop", f"turn {turn} step {step}: {call.name} called "
                                     f"{LOOP_CALLS} times with the same arguments", turn)
                history.append(self._call_tool(turn, step, call, planned_revision, trace))
        raise AgentError("step_limit", f"turn {turn}: no final reply within "
                                       f"{self.step_limit} steps", turn)

    def _call_tool(self, turn: int, step: int, call: ToolCallRequest, planned_revision: int,
                   trace: Trace) -> dict[str, Any]:
        spec = self.sandbox.domain.tool(call.name)
        kind = spec.kind if spec is not None else "read"
        decision = self.memory.gate(call.name, kind, planned_revision)
        if decision.allowed:
            result_json = sandbox_call(self.sandbox, trace, turn, step, call)
        else:  # dropped before any effect; the planner sees why and plans again
            error = f"{BLOCKED}{decision.reason}"
            result_json = json.dumps({"error": error}, ensure_ascii=False, sort_keys=True)
            _record_call(trace, turn, step, call, result_json, error, blocked=True,
                         intercepted=False, revision=self.sandbox.revision, effects=None)
        return {"role": "tool", "tool_call_id": call.id, "content": result_json}

    @staticmethod
    def _record_reply(turn: int, step: int, reply: ModelReply, trace: Trace) -> None:
        record_reply(trace, turn, step, reply)


def sandbox_call(sandbox: Sandbox, trace: Trace, turn: int, step: int,
                 call: ToolCallRequest) -> str:
    """Run ``call`` in the trial's sandbox, record it and its result; the result as JSON."""
    outcome = sandbox.call(call.name, call.arguments)
    result_json = json.dumps(outcome.result, ensure_ascii=False, sort_keys=True)
    _record_call(trace, turn, step, call, result_json, outcome.error, blocked=False,
                 intercepted=outcome.intercepted, revision=outcome.state_revision,
                 effects=outcome.effects)
    return result_json


def _record_call(trace: Trace, turn: int, step: int, call: ToolCallRequest, result_json: str,
                 error: str | None, *, blocked: bool, intercepted: bool, revision: int | None,
                 effects: int | None) -> None:
    trace.add(ToolCall(turn=turn, step=step, tool_name=call.name, tool_call_id=call.id,
                       arguments=redact(call.arguments), intercepted=intercepted,
                       state_revision=revision, tool_error=error, blocked=blocked,
                       effects=effects))
    trace.add(ToolResult(turn=turn, step=step, tool_name=call.name, tool_call_id=call.id,
                         result=redact(result_json), tool_error=error, blocked=blocked))


def record_reply(trace: Trace, turn: int, step: int, reply: ModelReply) -> None:
    """A planner call's reply as an assistant message event (its usage: ``record_usage``)."""
    trace.add(AssistantMessage(
        turn=turn, step=step, content=redact_optional(reply.content),
        input_tokens=reply.input_tokens, output_tokens=reply.output_tokens,
        cached_input_tokens=reply.cached_input_tokens, latency_ms=reply.latency_ms,
        finish_reason=reply.finish_reason))


def _empty(reply: ModelReply) -> bool:
    """Neither text nor a tool call (a reply cut off at the token limit is not empty: it is
    ``output_truncated``)."""
    return (not reply.tool_calls and not (reply.content or "").strip()
            and reply.finish_reason != TRUNCATED)


def _canonical_arguments(arguments: str) -> str:
    """Arguments as canonical JSON when they parse, else the raw text."""
    try:
        return json.dumps(json.loads(arguments or "{}"), sort_keys=True, ensure_ascii=False)
    except json.JSONDecodeError:
        return arguments
