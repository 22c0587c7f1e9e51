"""The trial's tools as an MCP server (streamable HTTP on loopback, one URL per trial), for
agents whose framework reaches tools over MCP. Optional: it needs the ``mcp`` package (the
``agents`` extra); without it a session's ``mcp_url`` is None.

One server per process, in a thread of its own with its event loop (uvicorn on a socket bound to
127.0.0.1), stateless and answering JSON: ``/t/<token>/mcp`` lists the trial's tools and calls
them through the same door as ``call_tool`` and the HTTP route (the sandbox, the journal, the
trace), behind the trial's bearer key.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from pipeline.trial.external.door import Door, Refusal

LOOPBACK = "127.0.0.1"
START_TIMEOUT_S = 30.0


def available() -> bool:
    """Whether the ``mcp`` package is installed (the ``agents`` extra)."""
    return importlib.util.find_spec("mcp") is not None


class McpTools:
    """The process's MCP server; ``door_of(token)`` finds a trial's door."""

    def __init__(self, door_of: Callable[[str], Door | None]) -> None:
        import uvicorn
        from mcp.server.lowlevel import Server
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        self.door_of = door_of
        server: Server[Any] = Server("agentsweep-trial-tools", on_list_tools=self._list,
                                     on_call_tool=self._call)
        self.manager = StreamableHTTPSessionManager(server, json_response=True, stateless=True)
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.socket.bind((LOOPBACK, 0))
        config = uvicorn.Config(self._app, interface="asgi3", log_level="warning",
                                lifespan="on", access_log=False)
        self.server = uvicorn.Server(config)
        thread = threading.Thread(target=self._serve, name="agentsweep-mcp", daemon=True)
        thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self.server.started and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.005)
        if not self.server.started:
            raise RuntimeError(f"the MCP server did not start within {START_TIMEOUT_S:g} s")

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.socket.getsockname()[1]}"

    def _serve(self) -> None:
        self.server.run(sockets=[self.socket])

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        parts = str(scope.get("path", "")).split("/")  # '', 't', token, 'mcp'
        door = self.door_of(parts[2]) if len(parts) == 4 and parts[1] == "t" else None
        headers = dict(scope.get("headers") or [])
        if door is None or parts[3] != "mcp":
            await _plain(send, 404, "no trial is open at this URL")
        elif headers.get(b"authorization", b"").decode() != f"Bearer {door.key}":
            await _plain(send, 401, "the trial's key is required (Authorization: Bearer)")
        else:
            await self.manager.handle_request(scope, receive, send)

    async def _lifespan(self, receive: Any, send: Any) -> None:
        async with contextlib.AsyncExitStack() as stack:
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await stack.enter_async_context(self.manager.run())
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return

    def _door(self, context: Any) -> Door:
        path = str(context.request.url.path) if context.request is not None else ""
        parts = path.split("/")
        door = self.door_of(parts[2]) if len(parts) == 4 else None
        if door is None:
            raise Refusal(404, "trial_closed", "no trial is open at this URL")
        return door

    async def _list(self, context: Any, params: Any) -> Any:
        from mcp import types

        door = self._door(context)
        return types.ListToolsResult(tools=[
            types.Tool(name=t["function"]["name"],
                       description=t["function"].get("description") or "",
                       input_schema=t["function"].get("parameters") or {"type": "object"})
            for t in door.sandbox.domain.openai_tools()])

    async def _call(self, context: Any, params: Any) -> Any:
        import anyio
        from mcp import types

        door = self._door(context)
        try:
            result = await anyio.to_thread.run_sync(door.call_tool, params.name,
                                                    dict(params.arguments or {}))
        except Refusal as refusal:
            return types.CallToolResult(content=[types.TextContent(type="text",
                                                                   text=str(refusal))],
                                        is_error=True)
        decoded = json.loads(result)
        error = decoded.get("error") if isinstance(decoded, dict) else None
        return types.CallToolResult(content=[types.TextContent(type="text", text=result)],
                                    is_error=bool(error))


async def _plain(send: Any, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


_tools: McpTools | None = None
_lock = threading.Lock()


def mcp_tools(door_of: Callable[[str], Door | None]) -> McpTools | None:
    """This process's MCP server, started on first use; None without the ``mcp`` package."""
    global _tools
    with _lock:
        if _tools is None and available():
            _tools = McpTools(door_of)
        return _tools
