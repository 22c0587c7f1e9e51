"""The reference models served over HTTP: an OpenAI-compatible server on loopback, with faults.

A sweep reaches it through LiteLLM's real HTTP path as ``openai/<variant>`` with
``api_base=http://127.0.0.1:PORT/v1``. Endpoints: ``POST /v1/chat/completions``,
``GET /v1/models``, ``GET /health``.

- **Model**: the body's ``model`` is a variant of ``REFERENCE_VARIANTS`` (``golden``); the
  response reports ``<variant>-<SERVED_VERSION>`` as its model, so model_version gets filled.
- **Script**: in the body under ``agentsweep_reference_script`` (LiteLLM forwards
  ``extra_body={SCRIPT_KEY: script}`` into the JSON body). The place in the script comes from the
  conversation, exactly as for the in-process ``reference/golden`` provider.
- **Usage**: prompt/completion tokens are whitespace-separated word counts over the strings of
  the request's messages and tools, and of the answer message: deterministic, never null.
- **Broken scripts**: a script with no action for the conversation's place is answered 400 with
  the error ``type`` ``SCRIPT_ERROR_TYPE`` (our harness's fault: the reference provider classifies
  it as a harness error).
- **Requests**: the options of the last ``RECEIVED_KEPT`` chat completions (the body without its
  messages, tools and script: model, temperature, seed, other params, the call tag) are kept,
  in arrival order, for tests to see what a sweep really sent (``ServerHandle.received``).
- **Faults**: the server's ``FaultProfile`` applies to every chat completion. A request may carry
  its own profile as JSON in the ``X-Agentsweep-Faults`` header (LiteLLM:
  ``extra_headers={...}``); it *replaces* the server's profile for that request. Decisions
  come from one seeded ``random.Random`` shared by all requests, in arrival order.
  ``/v1/models`` and ``/health`` never fail.

Binds 127.0.0.1 only. Not for production; a fixture for tests, benchmarks and fault drills.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from pipeline.models.faults import NO_FAULTS, FaultDecision, FaultProfile
from pipeline.models.routes import CALL_TAG_KEY
from pipeline.reference.reference import (
    REFERENCE_VARIANTS,
    SCRIPT_ERROR_TYPE,
    SCRIPT_KEY,
    ReferenceScriptError,
    answer,
)

HOST = "127.0.0.1"
FAULTS_HEADER = "X-Agentsweep-Faults"
SERVED_VERSION = "2026-11"
RECEIVED_KEPT = 10_000
IDLE_TIMEOUT_S = 30.0
"""A keep-alive connection with no request for this long is closed by the server."""
_SAYS_RATE_LIMIT = re.compile(r"rate[\s_\-]*limit", re.IGNORECASE)
"""LiteLLM turns any error whose text matches this into RateLimitError, whatever the status."""


class RequestError(Exception):
    """A request the server refuses, answered as an OpenAI-style error body."""

    def __init__(self, status: int, message: str, error_type: str = "invalid_request_error",
                 code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type
        self.code = code

    def body(self) -> dict[str, Any]:
        message = str(self)
        if self.status != 429:  # e.g. a 400 naming the `rate_limit` field must stay a 400
            message = _SAYS_RATE_LIMIT.sub("429-rate", message)
        return {"error": {"message": message, "type": self.error_type, "param": None,
                          "code": self.code}}


def chat_completion(body: dict[str, Any], created: int, plays: str | None = None
                    ) -> dict[str, Any]:
    """The chat.completion answer to one request body (pure). Raises RequestError.
    ``plays``: answer as this variant whatever model the request names (a model that changed
    behind an unchanged name, for fault drills); the answer still names the requested model."""
    name = body.get("model")
    if not isinstance(name, str) or name not in REFERENCE_VARIANTS:
        raise RequestError(404, f"unknown model {name!r}; served: "
                                f"{', '.join(sorted(REFERENCE_VARIANTS))}",
                           code="model_not_found")
    if body.get("stream"):
        raise RequestError(400, "streaming is not supported by the reference server")
    messages = body.get("messages")
    script = body.get(SCRIPT_KEY)
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise RequestError(400, "'messages' must be a list of objects")
    if not isinstance(script, dict):
        raise RequestError(400, f"no script: pass it in the body under {SCRIPT_KEY!r} "
                                f"(LiteLLM: extra_body={{{SCRIPT_KEY!r}: script}})")
    try:
        choice = {"index": 0, **answer(plays or name, script, messages, body.get(CALL_TAG_KEY))}
    except ReferenceScriptError as exc:
        raise RequestError(400, str(exc), SCRIPT_ERROR_TYPE) from None
    prompt_tokens = count_words([messages, body.get("tools") or []])
    completion_tokens = count_words(choice["message"])
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:24]
    return {
        "id": f"chatcmpl-{digest}",
        "object": "chat.completion",
        "created": created,
        "model": f"{name}-{SERVED_VERSION}",
        "system_fingerprint": f"agentsweep-reference-{SERVED_VERSION}",
        "choices": [choice],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def count_words(value: Any) -> int:
    """Whitespace-separated words over every string in a JSON value (our 'tokenizer')."""
    if isinstance(value, str):
        return len(value.split())
    if isinstance(value, dict):
        return sum(count_words(v) for v in value.values())
    if isinstance(value, list):
        return sum(count_words(v) for v in value)
    return 0


def parse_faults_header(value: str) -> FaultProfile:
    try:
        return FaultProfile.model_validate_json(value)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'profile'}: {e['msg']}"
                             for e in exc.errors())
        raise RequestError(400, f"{FAULTS_HEADER}: {problems}") from None


class ReferenceHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the default 5 dropped connections under bursts of trials

    def __init__(self, port: int, faults: FaultProfile, seed: int | None,
                 verbose: bool = False, plays: str | None = None) -> None:
        if plays is not None and plays not in REFERENCE_VARIANTS:
            raise ValueError(f"unknown reference variant {plays!r}")
        super().__init__((HOST, port), _Handler)
        self.plays = plays
        self.faults = faults
        self.verbose = verbose
        self.stopping = threading.Event()
        self.counts: dict[str, int] = {}
        self.received: deque[dict[str, Any]] = deque(maxlen=RECEIVED_KEPT)
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def decide(self, profile: FaultProfile) -> FaultDecision:
        with self._lock:
            decision = profile.decide(self._rng)
            self.counts[decision.kind] = self.counts.get(decision.kind, 0) + 1
        return decision

    def record(self, body: dict[str, Any]) -> None:
        """Keep a request's options (not its messages, tools or script)."""
        options = {k: v for k, v in body.items() if k not in ("messages", "tools", SCRIPT_KEY)}
        with self._lock:
            self.received.append(options)

    def received_options(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.received)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def close(self) -> None:
        """Wake sleeping handlers, close open connections and the listening socket."""
        self.stopping.set()
        with self._lock:
            sockets = list(self._open)
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    server: ReferenceHTTPServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else each keep-alive answer waits ~40 ms for a delayed ACK
    timeout = IDLE_TIMEOUT_S

    def do_GET(self) -> None:
        path = urlsplit(self.path).path.rstrip("/")
        if path == "/health":
            self._send_json(200, {"status": "ok"})
        elif path == "/v1/models":
            self._send_json(200, {"object": "list", "data": [
                {"id": name, "object": "model", "created": 0, "owned_by": "agentsweep"}
                for name in sorted(REFERENCE_VARIANTS)]})
        else:
            self._send_error(RequestError(404, f"no route GET {path}", code="not_found"))

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = urlsplit(self.path).path.rstrip("/")
        if path != "/v1/chat/completions":
            self._send_error(RequestError(404, f"no route POST {path}", code="not_found"))
            return
        try:
            header = self.headers.get(FAULTS_HEADER)
            profile = parse_faults_header(header) if header else self.server.faults
        except RequestError as exc:
            self._send_error(exc)
            return
        decision = self.server.decide(profile)
        if self.server.stopping.wait(decision.delay_s):
            return
        if not self._inject(decision, profile):
            self._answer(raw)

    def _inject(self, decision: FaultDecision, profile: FaultProfile) -> bool:
        """Apply an injected fault; True when the request is done with."""
        if decision.kind == "rate_limit":
            self._send_error(
                RequestError(429, "injected rate limit", "rate_limit_error", "rate_limit_exceeded"),
                headers={"Retry-After": f"{profile.retry_after_s:g}"})
        elif decision.kind == "server_error":
            self._send_error(RequestError(500, "injected server error", "server_error"))
        elif decision.kind == "connection_drop":
            self.close_connection = True  # nothing written: the socket just closes
        elif decision.kind == "timeout":
            return self.server.stopping.wait(profile.timeout_sleep_s)
        return decision.kind != "none"

    def _answer(self, raw: bytes) -> None:
        try:
            body = json.loads(raw or b"null")
            if not isinstance(body, dict):
                raise RequestError(400, "the request body must be a JSON object")
            self.server.record(body)
            self._send_json(200, chat_completion(body, int(time.time()), self.server.plays))
        except json.JSONDecodeError as exc:
            self._send_error(RequestError(400, f"request body is not JSON: {exc.msg}"))
        except RequestError as exc:
            self._send_error(exc)

    def _send_error(self, exc: RequestError, headers: dict[str, str] | None = None) -> None:
        self._send_json(exc.status, exc.body(), headers)

    def _send_json(self, status: int, payload: dict[str, Any],
                   headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (e.g. its timeout): fine

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            super().log_message(format, *args)


@dataclass
class ServerHandle:
    """A reference server running in a background thread; ``stop()`` (or ``with``) ends it."""

    server: ReferenceHTTPServer
    thread: threading.Thread

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def api_base(self) -> str:
        return f"http://{HOST}:{self.port}/v1"

    @property
    def counts(self) -> dict[str, int]:
        """Chat completions served so far, by fault decision ("none" = normal answer)."""
        return dict(self.server.counts)

    @property
    def received(self) -> list[dict[str, Any]]:
        """Options of the chat completions answered so far (see ``RECEIVED_KEPT``)."""
        return self.server.received_options()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.close()
        self.thread.join(timeout=5)

    def __enter__(self) -> ServerHandle:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def start_server(port: int = 0, faults: FaultProfile | None = None, seed: int | None = 0,
                 verbose: bool = False, plays: str | None = None) -> ServerHandle:
    """Serve on 127.0.0.1:``port`` (0: any free port) in a daemon thread; returns at once."""
    server = ReferenceHTTPServer(port, faults or NO_FAULTS, seed, verbose, plays)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              name=f"reference-server-{server.port}", daemon=True)
    thread.start()
    return ServerHandle(server, thread)


def serve_forever(port: int, faults: FaultProfile | None = None, seed: int | None = 0,
                  on_ready: Callable[[int], None] | None = None,
                  plays: str | None = None) -> None:
    """Serve in the foreground until KeyboardInterrupt (Ctrl-C), then close cleanly."""
    server = ReferenceHTTPServer(port, faults or NO_FAULTS, seed, verbose=True, plays=plays)
    if on_ready is not None:
        on_ready(server.port)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
