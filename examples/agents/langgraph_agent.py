"""A LangGraph agent under test: a prebuilt ReAct graph, its model the trial's gateway
(``ChatOpenAI``), its tools the trial's MCP server (listed and called with the ``mcp`` client,
each a LangChain tool). Needs the ``agents`` extra; no import of agentsweep.

    agentsweep run --agent examples/agents/langgraph_agent.py:make --model reference/golden

(``langchain-mcp-adapters`` 0.3.1, the latest, does not import with ``mcp`` 2: the few lines of
``mcp_tools`` below do its work.)
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

import httpx2
from langchain_core.tools import StructuredTool
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import create_react_agent
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

__version__ = "1.0"


async def mcp_tools(client: Client) -> list[StructuredTool]:
    """The server's tools as LangChain tools (JSON schemas as they are)."""

    def tool(name: str, description: str, schema: dict[str, Any]) -> StructuredTool:
        async def call(**arguments: Any) -> str:
            result = await client.call_tool(name, arguments)
            return "\n".join(getattr(part, "text", "") for part in result.content)

        return StructuredTool.from_function(coroutine=call, name=name,
                                            description=description, args_schema=schema)

    listed = await client.list_tools()
    return [tool(t.name, t.description or t.name, dict(t.input_schema)) for t in listed.tools]


class LangGraphAgent:
    """One graph per trial (made at the first turn, once the MCP tools are listed); the
    messages so far are the next turn's input."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.model = ChatOpenAI(model=session.model, base_url=session.model_base_url,
                                api_key=session.api_key, max_retries=0)
        self.stack = AsyncExitStack()
        self.graph: Any = None
        self.messages: list[Any] = []

    async def respond(self, user_message: str) -> str:
        if self.graph is None:
            http = httpx2.AsyncClient(
                headers={"Authorization": f"Bearer {self.session.api_key}"})
            client = await self.stack.enter_async_context(
                Client(streamable_http_client(self.session.mcp_url, http_client=http)))
            self.graph = create_react_agent(self.model, await mcp_tools(client),
                                            prompt=self.session.system_prompt)
        state = await self.graph.ainvoke(
            {"messages": [*self.messages, {"role": "user", "content": user_message}]},
            {"recursion_limit": 2 * self.session.max_steps + 1})
        self.messages = state["messages"]
        return str(self.messages[-1].content)

    async def aclose(self) -> None:
        await self.stack.aclose()


def make(session: Any) -> LangGraphAgent:
    return LangGraphAgent(session)
