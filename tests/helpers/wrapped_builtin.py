"""The built-in agent (chat memory) wrapped as an external Python agent: its own loop, its model
reached through the trial's gateway with the ``openai`` client, its tools through
``session.call_tool``. Its verdicts must be the built-in agent's, trial by trial."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from openai import OpenAI

from pipeline.environment.sandbox import ToolOutcome
from pipeline.models.client import CallPurpose, ModelReply, ToolCallRequest
from pipeline.trace import Trace
from pipeline.trial.agent import Agent

__version__ = "wrapped-1"
CLIENT = OpenAI(api_key="set per session", base_url="http://127.0.0.1/v1")


@dataclass
class GatewayModel:
    """A ModelClient that asks the gateway, as any OpenAI-SDK agent would."""

    client: OpenAI
    model: str

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 purpose: CallPurpose = "planner", turn: int = 0,
                 response_schema: dict[str, Any] | None = None) -> ModelReply:
        completion = self.client.chat.completions.create(
            model=self.model, messages=messages, tools=tools or [])  # type: ignore[arg-type]
        choice = completion.choices[0]
        calls = tuple(ToolCallRequest(c.id, c.function.name, c.function.arguments)
                      for c in choice.message.tool_calls or ()
                      if c.type == "function")
        usage = completion.usage
        return ModelReply(choice.message.content, calls, choice.finish_reason,
                          usage.prompt_tokens if usage else None,
                          usage.completion_tokens if usage else None, None, None, 0.0)


@dataclass
class BridgeSandbox:
    """The agent's sandbox: every call goes to the trial's tools bridge."""

    session: Any
    revision: int = 1
    domain: Any = field(default=None)

    def __post_init__(self) -> None:
        self.domain = self

    def tool(self, name: str) -> None:
        return None  # chat memory gates nothing: the tool's kind is not needed

    def call(self, name: str, raw_arguments: str) -> ToolOutcome:
        result = json.loads(self.session.call_tool(name, json.loads(raw_arguments or "{}")))
        error = result.get("error") if isinstance(result, dict) else None
        return ToolOutcome(result, False, self.revision, error)


class WrappedBuiltin:
    def __init__(self, session: Any) -> None:
        self.client = CLIENT.with_options(base_url=session.model_base_url,
                                          api_key=session.api_key)
        self.agent = Agent(model=GatewayModel(self.client, session.model),
                           system_prompt=session.system_prompt, tools=session.tools,
                           sandbox=BridgeSandbox(session),  # type: ignore[arg-type]
                           step_limit=session.max_steps)
        self.history: list[dict[str, Any]] = []
        self.turn = 0

    def respond(self, user_message: str) -> str:
        self.turn += 1
        return self.agent.respond(self.turn, user_message, self.history, Trace())


def make(session: Any) -> WrappedBuiltin:
    return WrappedBuiltin(session)
