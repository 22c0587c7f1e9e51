"""Small external agents for the tests, each one behaviour (``tests/helpers/agents.py:<name>``)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

from openai import OpenAI, OpenAIError


class _Plain:
    """The docs' loop: model steps until a reply without tool calls; ``stream`` asks for
    server-sent events."""

    def __init__(self, session: Any, stream: bool = False) -> None:
        self.session = session
        self.stream = stream
        self.client = OpenAI(base_url=session.model_base_url, api_key=session.api_key,
                             max_retries=0)
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": session.system_prompt}]

    def respond(self, user_message: str) -> str:
        self.messages.append({"role": "user", "content": user_message})
        for _ in range(8):
            message = self._step()
            self.messages.append(message)
            if not message.get("tool_calls"):
                return str(message.get("content") or "")
            for call in message["tool_calls"]:
                result = self.session.call_tool(call["function"]["name"],
                                                json.loads(call["function"]["arguments"]))
                self.messages.append({"role": "tool", "tool_call_id": call["id"],
                                      "content": result})
        return "no reply"

    def _step(self) -> dict[str, Any]:
        if not self.stream:
            completion = self.client.chat.completions.create(
                model=self.session.model, messages=self.messages,  # type: ignore[arg-type]
                tools=self.session.tools)
            return completion.choices[0].message.model_dump(exclude_none=True)
        content, calls = "", {}
        for chunk in self.client.chat.completions.create(
                model=self.session.model, messages=self.messages,  # type: ignore[arg-type]
                tools=self.session.tools, stream=True):
            if not chunk.choices:
                continue
            delta = chunk.choices[0].delta
            content += delta.content or ""
            for call in delta.tool_calls or ():
                calls[call.index] = {"id": call.id, "type": "function", "function": {
                    "name": call.function.name, "arguments": call.function.arguments}}
        message: dict[str, Any] = {"role": "assistant", "content": content or None}
        if calls:
            message["tool_calls"] = [calls[i] for i in sorted(calls)]
        return message


def plain(session: Any) -> _Plain:
    return _Plain(session)


def streaming(session: Any) -> _Plain:
    return _Plain(session, stream=True)


class _Swallowing(_Plain):
    """Catches every model error and answers anyway (the gateway's failure still counts)."""

    def respond(self, user_message: str) -> str:
        try:
            return super().respond(user_message)
        except OpenAIError:
            return "Something went wrong, but here is a reply."


def swallowing(session: Any) -> _Swallowing:
    return _Swallowing(session)


class _Raising:
    def respond(self, user_message: str) -> str:
        raise RuntimeError("the agent's own bug")


def raising(session: Any) -> _Raising:
    return _Raising()


class _Sleeping:
    def respond(self, user_message: str) -> str:
        time.sleep(30)
        return "too late"


def sleeping(session: Any) -> _Sleeping:
    return _Sleeping()


class _NotText:
    def respond(self, user_message: str) -> dict[str, str]:
        return {"reply": "a dict"}


def not_text(session: Any) -> _NotText:
    return _NotText()


class _Async(_Plain):
    async def respond(self, user_message: str) -> str:  # type: ignore[override]
        return super().respond(user_message)


def asynchronous(session: Any) -> _Async:
    return _Async(session)


def no_respond(session: Any) -> object:
    return object()


SEEN: dict[str, Any] = {}
SEARCH = {"capacity": 6, "starts_at": "2026-08-07T15:00:00+03:00", "required_features": []}


class _Probe:
    """An agent that lets the test call the gateway itself (with the session's key)."""

    def __init__(self, session: Any) -> None:
        self.session = session

    def respond(self, user_message: str) -> str:
        url = self.session.model_base_url + "/models"
        SEEN["models"] = get(url, self.session.api_key)
        SEEN["no_key"] = status(url, "wrong-key")
        SEEN["tools"] = get(self.session.tools_url, self.session.api_key)
        SEEN["tool_call"] = post(self.session.tools_url + "/search_rooms",
                                 SEARCH, self.session.api_key)
        SEEN["unknown_tool"] = post(self.session.tools_url + "/launch_rockets", {},
                                    self.session.api_key)
        SEEN["session"] = self.session
        return "Here is what I found."


def get(url: str, key: str) -> Any:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


def post(url: str, body: Any, key: str) -> Any:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={
        "Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


def status(url: str, key: str) -> int:
    try:
        get(url, key)
    except urllib.error.HTTPError as exc:
        return exc.code
    return 200


def probe(session: Any) -> _Probe:
    return _Probe(session)


class _McpAgent:
    """Reaches the trial's tools over MCP (the ``mcp`` package's client), as a framework
    would: lists them, then calls ``search_rooms``."""

    def __init__(self, session: Any) -> None:
        self.session = session

    async def respond(self, user_message: str) -> str:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {self.session.api_key}"})
        async with Client(streamable_http_client(self.session.mcp_url,
                                                 http_client=http)) as client:
            listed = await client.list_tools()
            result = await client.call_tool("search_rooms", SEARCH)
        SEEN["mcp_tools"] = [t.name for t in listed.tools]
        SEEN["mcp_result"] = (result.is_error, result.content[0].text)
        SEEN["mcp_bad_key"] = status(self.session.mcp_url, "wrong-key")
        return "Here is what I found."


def mcp_agent(session: Any) -> _McpAgent:
    return _McpAgent(session)
