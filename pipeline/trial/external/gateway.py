"""The loopback doors of a worker process: an OpenAI-compatible model gateway and the tools
bridge's HTTP route, one URL prefix per trial.

One server per process (a thread per connection, started at the first external trial), on
127.0.0.1 only. Under ``/t/<token>``, for the trial that token opened:

- ``POST /v1/chat/completions``: a chat completion with tools, streamed (server-sent events)
  when asked; the grid cell's model answers, whatever ``model`` the request names;
- ``GET /v1/models``: the one model name the trial asks for;
- ``GET /tools``: the domain's tools as OpenAI function schemas;
- ``POST /tools/<name>``: a tool call (the body is its arguments, a JSON object); the answer is
  ``{"result": <the tool's JSON>, "error": <text or null>}``.

Every request carries the trial's key as a bearer token. The requests' own generation options
(temperature, max_tokens...) are not used: the grid cell's are.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pipeline.models.client import ModelReply
from pipeline.trial.external.door import Door, Refusal
from pipeline.util.redact import redact

LOOPBACK = "127.0.0.1"
MAX_BODY = 32 * 1024 * 1024


class Gateway:
    """The process's doors server and the trials it serves."""

    def __init__(self) -> None:
        self._doors: dict[str, Door] = {}
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer((LOOPBACK, 0), _Handler)
        self.server.daemon_threads = True
        self.server.gateway = self  # type: ignore[attr-defined]
        threading.Thread(target=self.server.serve_forever, name="agentsweep-gateway",
                         daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.server.server_address[1]}"

    def trial_url(self, door: Door) -> str:
        return f"{self.url}/t/{door.token}"

    def open(self, door: Door) -> None:
        with self._lock:
            self._doors[door.token] = door

    def close(self, door: Door) -> None:
        door.close()
        with self._lock:
            self._doors.pop(door.token, None)

    def door(self, token: str) -> Door | None:
        with self._lock:
            return self._doors.get(token)


_gateway: Gateway | None = None
_gateway_lock = threading.Lock()


def gateway() -> Gateway:
    """This process's gateway, started on first use."""
    global _gateway
    with _gateway_lock:
        if _gateway is None:
            _gateway = Gateway()
        return _gateway


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "agentsweep-gateway"
    disable_nagle_algorithm = True  # headers and body leave at once (no 40 ms ACK wait)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        """Requests are not logged (the trace records every call)."""

    def do_GET(self) -> None:  # noqa: N802
        self._serve("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._serve("POST")

    def _serve(self, method: str) -> None:
        door: Door | None = None
        try:
            door, rest = self._door()
            self._route(method, door, rest)
        except Refusal as refusal:
            self._refuse(refusal)
        except Exception as exc:  # our bug: the trial is incomplete, never the agent's fault
            message = f"the gateway failed: {type(exc).__name__}: {exc}"
            if door is not None:
                door.harness_failure(message)
            self._refuse(Refusal(500, "harness_error", message))

    def _refuse(self, refusal: Refusal) -> None:
        self._json(refusal.status, {"error": {"message": redact(str(refusal)),
                                              "type": refusal.kind, "code": refusal.kind}})

    def _door(self) -> tuple[Door, str]:
        parts = self.path.split("?", 1)[0].split("/", 3)  # '', 't', token, rest
        if len(parts) < 4 or parts[1] != "t":
            raise Refusal(404, "not_found", f"no such route: {self.path[:200]}")
        gateway: Gateway = self.server.gateway  # type: ignore[attr-defined]
        door = gateway.door(parts[2])
        if door is None:
            raise Refusal(404, "trial_closed", "no trial is open at this URL")
        if self.headers.get("Authorization", "") != f"Bearer {door.key}":
            raise Refusal(401, "invalid_api_key", "the trial's key is required "
                                                  "(Authorization: Bearer <session.api_key>)")
        return door, "/" + parts[3]

    def _route(self, method: str, door: Door, rest: str) -> None:
        if method == "POST" and rest in ("/v1/chat/completions", "/chat/completions"):
            self._completion(door, self._body())
        elif method == "GET" and rest in ("/v1/models", "/models"):
            self._json(200, {"object": "list", "data": [
                {"id": door.alias, "object": "model", "created": 0, "owned_by": "agentsweep"}]})
        elif method == "GET" and rest == "/tools":
            self._json(200, {"tools": door.sandbox.domain.openai_tools()})
        elif method == "POST" and rest.startswith("/tools/"):
            arguments = self._body()
            result = door.call_tool(rest.removeprefix("/tools/"), arguments)
            decoded = json.loads(result)
            error = decoded.get("error") if isinstance(decoded, dict) else None
            self._json(200, {"result": decoded, "error": error})
        else:
            raise Refusal(404, "not_found", f"no such route: {method} {rest[:200]}")

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise Refusal(413, "too_large", f"a request body of {length} bytes")
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise Refusal(400, "invalid_request_error", f"the body is no JSON: {exc}") from exc
        if not isinstance(body, dict):
            raise Refusal(400, "invalid_request_error", "the body must be a JSON object")
        return body

    def _completion(self, door: Door, body: dict[str, Any]) -> None:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise Refusal(400, "invalid_request_error", "messages: a non-empty list is required")
        tools = body.get("tools")
        reply = door.complete(messages, tools if isinstance(tools, list) else None,
                              _response_schema(body.get("response_format")))
        answer = _completion(reply, door.model_name)
        if body.get("stream"):
            usage = bool((body.get("stream_options") or {}).get("include_usage"))
            self._events(_chunks(answer, usage))
        else:
            self._json(200, answer)

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _events(self, chunks: Iterator[dict[str, Any]]) -> None:
        data = b"".join(b"data: " + json.dumps(c, ensure_ascii=False).encode() + b"\n\n"
                        for c in chunks) + b"data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _response_schema(response_format: Any) -> dict[str, Any] | None:
    """A ``json_schema`` response format's schema (the trial's client enforces it)."""
    if isinstance(response_format, dict) and response_format.get("type") == "json_schema":
        schema = (response_format.get("json_schema") or {}).get("schema")
        return schema if isinstance(schema, dict) else None
    return None


def _completion(reply: ModelReply, model: str) -> dict[str, Any]:
    message = reply.assistant_message()
    finish = "tool_calls" if reply.tool_calls else (reply.finish_reason or "stop")
    answer: dict[str, Any] = {
        "id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion",
        "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish,
                     "logprobs": None}],
    }
    if reply.input_tokens is not None and reply.output_tokens is not None:
        answer["usage"] = {"prompt_tokens": reply.input_tokens,
                           "completion_tokens": reply.output_tokens,
                           "total_tokens": reply.input_tokens + reply.output_tokens}
    return answer


def _chunks(answer: dict[str, Any], usage: bool) -> Iterator[dict[str, Any]]:
    """A completion as stream chunks: the whole message in one delta, then the finish."""
    head = {k: answer[k] for k in ("id", "created", "model")} | {
        "object": "chat.completion.chunk"}
    choice = answer["choices"][0]
    delta: dict[str, Any] = {"role": "assistant", "content": choice["message"]["content"]}
    if choice["message"].get("tool_calls"):
        delta["tool_calls"] = [{"index": i, **call}
                               for i, call in enumerate(choice["message"]["tool_calls"])]
    yield head | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    yield head | {"choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]}
    if usage:
        yield head | {"choices": [], "usage": answer.get("usage")}
