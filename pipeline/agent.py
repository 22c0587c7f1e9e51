"""The built-in agent under test: system prompt + a model + the domain's tools.

Memory mode ``chat``: the model sees the system prompt and the whole history. Each user turn
runs model steps until the model answers without tool calls, at most ``step_limit`` steps. Every
tool call goes through the trial's sandbox. The agent does no scoring and no I/O of its own.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.errors import AgentError
from pipeline.llm import ModelClient, ModelReply
from pipeline.redact import redact, redact_optional
from pipeline.sandbox import Sandbox
from pipeline.trace import Trace


@dataclass
class Agent:
    model: ModelClient
    system_prompt: str
    tools: list[dict[str, Any]]
    sandbox: Sandbox
    step_limit: int = 8

    def run(self, user_turns: Sequence[str], trace: Trace) -> None:
        """Play the user turns in order, appending every event to ``trace``.

        Raises AgentError (counts against the agent) or InfraError (trial stays incomplete).
        """
        messages: list[dict[str, Any]] = [{"role": "system", "content": self.system_prompt}]
        for turn, text in enumerate(user_turns, start=1):
            messages.append({"role": "user", "content": text})
            trace.add(turn, 0, "user_message", content=redact(text))
            trace.turns_played = turn
            self._play_turn(turn, messages, trace)

    def _play_turn(self, turn: int, messages: list[dict[str, Any]], trace: Trace) -> None:
        for step in range(self.step_limit):
            reply = self.model.complete(messages, self.tools)
            trace.usage.add(reply.input_tokens, reply.output_tokens, reply.cost_usd,
                            reply.model_version)
            messages.append(reply.assistant_message())
            self._record_reply(turn, step, reply, trace)
            if not reply.tool_calls:
                if not (reply.content or "").strip():
                    raise AgentError("empty_response",
                                     f"turn {turn} step {step}: no text and no tool call")
                return
            for call in reply.tool_calls:
                outcome = self.sandbox.call(call.name, call.arguments)
                result_json = json.dumps(outcome.result, ensure_ascii=False, sort_keys=True)
                trace.add(turn, step, "tool_call", tool_name=call.name, tool_call_id=call.id,
                          arguments=redact(call.arguments), intercepted=outcome.intercepted,
                          state_revision=outcome.state_revision, tool_error=outcome.error)
                trace.add(turn, step, "tool_result", tool_name=call.name, tool_call_id=call.id,
                          result=redact(result_json), tool_error=outcome.error)
                messages.append({"role": "tool", "tool_call_id": call.id,
                                 "content": result_json})
        raise AgentError("step_limit", f"turn {turn}: no final reply within "
                                       f"{self.step_limit} steps")

    @staticmethod
    def _record_reply(turn: int, step: int, reply: ModelReply, trace: Trace) -> None:
        trace.add(turn, step, "assistant_message", content=redact_optional(reply.content),
                  input_tokens=reply.input_tokens, output_tokens=reply.output_tokens,
                  latency_ms=reply.latency_ms)
