"""A PydanticAI agent under test: the framework's own loop, its model the trial's gateway (an
OpenAI chat model), its tools the trial's MCP server. Needs the ``agents`` extra
(``pydantic-ai-slim[openai,mcp]``); no import of agentsweep.

    agentsweep run --agent examples/agents/pydantic_ai_agent.py:make --model reference/golden
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

__version__ = "1.0"


class PydanticAiAgent:
    """One PydanticAI agent per trial; the messages so far are the next run's history."""

    def __init__(self, session: Any) -> None:
        model = OpenAIChatModel(session.model, provider=OpenAIProvider(
            base_url=session.model_base_url, api_key=session.api_key))
        tools = MCPToolset(session.mcp_url,
                           headers={"Authorization": f"Bearer {session.api_key}"})
        self.agent = Agent(model, system_prompt=session.system_prompt, toolsets=[tools])
        self.history: list[Any] = []

    async def respond(self, user_message: str) -> str:
        result = await self.agent.run(user_message, message_history=self.history)
        self.history = result.all_messages()
        return str(result.output)


def make(session: Any) -> PydanticAiAgent:
    return PydanticAiAgent(session)
