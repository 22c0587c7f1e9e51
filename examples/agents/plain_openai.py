"""An agent written only against docs/agents.md: the plain ``openai`` client pointed at the
trial's model gateway, its tools run through ``session.call_tool``. No import of agentsweep.

    agentsweep run --agent examples/agents/plain_openai.py:make --model reference/golden
"""

from __future__ import annotations

import json
from typing import Any

from openai import OpenAI

__version__ = "1.0"
MAX_STEPS = 8
CLIENT = OpenAI(api_key="set per session", base_url="http://127.0.0.1/v1")
"""One HTTP client for the process; each trial gets a copy with its own URL and key (making a
client per trial costs about 24 ms of CPU, most of it a TLS context)."""


class PlainAgent:
    """Chat history in memory; each user turn runs model steps until a reply without tools."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.client = CLIENT.with_options(base_url=session.model_base_url,
                                          api_key=session.api_key)
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": session.system_prompt}]

    def respond(self, user_message: str) -> str:
        self.messages.append({"role": "user", "content": user_message})
        for _ in range(MAX_STEPS):
            completion = self.client.chat.completions.create(
                model=self.session.model, messages=self.messages, tools=self.session.tools)
            message = completion.choices[0].message
            self.messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                return message.content or ""
            for call in message.tool_calls:
                arguments = json.loads(call.function.arguments or "{}")
                result = self.session.call_tool(call.function.name, arguments)
                self.messages.append({"role": "tool", "tool_call_id": call.id,
                                      "content": result})
        return "Sorry, I could not finish that."


def make(session: Any) -> PlainAgent:
    return PlainAgent(session)
