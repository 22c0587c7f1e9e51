"""The built-in agent (chat memory) wrapped as an external Python agent: its own loop, its model
reached through the trial's gateway on the OpenAI wire (the standard library's HTTP client, one
connection a trial: the ``openai`` SDK's own path is tested by the other agents), its tools
through ``session.call_tool``. Its verdicts must be the built-in agent's, trial by trial."""

from __future__ import annotations

import http.client
import json
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from pipeline.environment.sandbox import ToolOutcome
from pipeline.models.client import CallPurpose, ModelReply, ToolCallRequest
from pipeline.trace import Trace
from pipeline.trial.agent import Agent

__version__ = "wrapped-1"


@dataclass
class GatewayModel:
    """A ModelClient that posts chat completions to the gateway."""

    base_url: str
    key: str
    model: str
    connection: http.client.HTTPConnection = field(init=False)

    def __post_init__(self) -> None:
        url = urllib.parse.urlsplit(self.base_url)
        self.path = url.path + "/chat/completions"
        self.connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=60)

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 purpose: CallPurpose = "planner", turn: int = 0,
                 response_schema: dict[str, Any] | None = None) -> ModelReply:
        body = json.dumps({"model": self.model, "messages": messages, "tools": tools or []})
        self.connection.request("POST", self.path, body, {
            "Authorization": f"Bearer {self.key}", "Content-Type": "application/json"})
        answer = self.connection.getresponse()
        completion = json.loads(answer.read())
        if answer.status != 200:
            raise RuntimeError(f"the gateway answered {answer.status}: {completion}")
        choice = completion["choices"][0]
        message = choice["message"]
        calls = tuple(ToolCallRequest(c["id"], c["function"]["name"], c["function"]["arguments"])
                      for c in message.get("tool_calls") or ())
        usage = completion.get("usage") or {}
        return ModelReply(message.get("content"), calls, choice["finish_reason"],
                          usage.get("prompt_tokens"), usage.get("completion_tokens"), None,
                          None, 0.0)


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
        self.model = GatewayModel(session.model_base_url, session.api_key, session.model)
        self.agent = Agent(model=self.model,
                           system_prompt=session.system_prompt, tools=session.tools,
                           sandbox=BridgeSandbox(session),  # type: ignore[arg-type]
                           step_limit=session.max_steps)
        self.history: list[dict[str, Any]] = []
        self.turn = 0

    def respond(self, user_message: str) -> str:
        self.turn += 1
        return self.agent.respond(self.turn, user_message, self.history, Trace())

    def close(self) -> None:
        self.model.connection.close()


def make(session: Any) -> WrappedBuiltin:
    return WrappedBuiltin(session)
