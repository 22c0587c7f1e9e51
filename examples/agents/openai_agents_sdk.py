"""An OpenAI Agents SDK agent under test: the SDK's own loop, its model the trial's gateway (the
chat completions API), its tools the trial's MCP server. Needs the ``agents`` extra
(``openai-agents``, ``mcp``); no import of agentsweep.

    agentsweep run --agent examples/agents/openai_agents_sdk.py:make --model reference/golden
"""

from __future__ import annotations

from typing import Any

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.mcp import MCPServerStreamableHttp
from openai import AsyncOpenAI

__version__ = "1.0"
set_tracing_disabled(True)  # the SDK would send its traces to OpenAI: nothing leaves loopback


class SdkAgent:
    """One Agents SDK agent per trial; the conversation so far is the next run's input."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.client = AsyncOpenAI(base_url=session.model_base_url, api_key=session.api_key)
        self.tools = MCPServerStreamableHttp(
            params={"url": session.mcp_url,
                    "headers": {"Authorization": f"Bearer {session.api_key}"}},
            cache_tools_list=True, client_session_timeout_seconds=60)
        self.agent = Agent(name="assistant", instructions=session.system_prompt,
                           model=OpenAIChatCompletionsModel(session.model, self.client),
                           mcp_servers=[self.tools])
        self.history: list[Any] = []
        self.connected = False

    async def respond(self, user_message: str) -> str:
        if not self.connected:
            await self.tools.connect()
            self.connected = True
        result = await Runner.run(self.agent, [*self.history,
                                               {"role": "user", "content": user_message}],
                                  max_turns=self.session.max_steps)
        self.history = result.to_input_list()
        return str(result.final_output)

    async def aclose(self) -> None:
        if self.connected:
            await self.tools.cleanup()
        await self.client.close()


def make(session: Any) -> SdkAgent:
    return SdkAgent(session)
