"""The reference models served over HTTP on loopback, in one of three wire formats, with faults.

A sweep reaches it through LiteLLM's real HTTP path for the wire format: ``openai/<variant>``
with ``api_base=http://127.0.0.1:PORT/v1`` (``POST /v1/chat/completions``, the default),
``anthropic/<variant>`` with ``api_base=http://127.0.0.1:PORT`` (``POST /v1/messages``) or
``gemini/<variant>`` with ``api_base=http://127.0.0.1:PORT/v1beta``
(``POST /v1beta/models/<variant>:generateContent``); ``ServerHandle.api_base`` gives the
right one. Every wire also serves ``GET /v1/models`` and ``GET /health``. Each wire translates
its request into the OpenAI-shaped chat body the reference models read, and their answer
back (``pipeline.reference.wire``).

- **Model**: the request's model is a variant of ``REFERENCE_VARIANTS`` (``golden``); the
  response reports ``<variant>-<SERVED_VERSION>`` as its model, so model_version gets filled.
- **Script**: registered once (``POST /agentsweep/scripts``) and named in each body by its id
  under ``agentsweep_reference_script_id`` (``pipeline.reference.scripts``: requests stay the
  size a real provider gets), or the script itself in the body under
  ``agentsweep_reference_script`` (LiteLLM forwards ``extra_body`` into the JSON body). The
  place in the script comes from the conversation, exactly as for the in-process
  ``reference/golden`` provider.
- **Usage**: prompt/completion tokens are whitespace-separated word counts over the strings of
  the (translated) request's messages and tools, and of the answer message: deterministic,
  never null. Cached prompt tokens (``wire.cached_words``) are reported where the wire has a
  field for them: Anthropic always, Gemini when there are some, OpenAI never.
- **Broken scripts**: a script with no action for the conversation's place is answered 400 with
  the error ``type`` ``SCRIPT_ERROR_TYPE`` (our harness's fault: the reference provider classifies
  it as a harness error).
- **Requests**: the options of the last ``RECEIVED_KEPT`` requests (the translated body without
  its messages, tools and script: model, temperature, seed, other params, the call tag) are
  kept, in arrival order, for tests to see what a sweep really sent (``ServerHandle.received``).
- **Faults**: the server's ``FaultProfile`` applies to every generate request, in the wire's own
  spelling (a 429 with ``Retry-After``, a 500, an overload: 529 ``overloaded_error`` on
  Anthropic's wire, 503 on the others, a context-length 400, a hang, a dropped connection). A
  request may carry its own profile as JSON in the ``X-Agentsweep-Faults`` header (LiteLLM:
  ``extra_headers={...}``); it *replaces* the server's profile for that request. Decisions
  come from one seeded ``random.Random`` shared by all requests, in arrival order.
  ``/v1/models`` and ``/health`` never fail.

Binds 127.0.0.1 only. Not for production; a fixture for tests, benchmarks and fault drills.
"""

from __future__ import annotations

import json
import random
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
from pipeline.reference.reference import REFERENCE_VARIANTS, SCRIPT_ERROR_TYPE, SCRIPT_KEY
from pipeline.reference.scripts import SCRIPT_ID_KEY, SCRIPTS_PATH, UNKNOWN_SCRIPT, ScriptStore
from pipeline.reference.wire import (
    SERVED_VERSION,
    RequestError,
    Wire,
    WireName,
    cached_words,
    chat_completion,
    count_words,
    wire_named,
)

__all__ = ["FAULTS_HEADER", "HOST", "SERVED_VERSION", "ReferenceHTTPServer", "RequestError",
           "ServerHandle", "chat_completion", "serve_forever", "start_server"]

HOST = "127.0.0.1"
FAULTS_HEADER = "X-Agentsweep-Faults"
RECEIVED_KEPT = 10_000
IDLE_TIMEOUT_S = 30.0
"""A keep-alive connection with no request for this long is closed by the server."""


def parse_faults_header(value: str) -> FaultProfile:
    try:
        return FaultProfile.model_validate_json(value)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'profile'}: {e['msg']}"
                             for e in exc.errors())
        raise RequestError(400, f"{FAULTS_HEADER}: {problems}") from None


def _words(raw: bytes) -> int:
    """A request body's words (what a context-length fault says the prompt had)."""
    try:
        return count_words(json.loads(raw or b"null"))
    except json.JSONDecodeError:
        return 0


class ReferenceHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the default 5 dropped connections under bursts of trials

    def __init__(self, port: int, faults: FaultProfile, seed: int | None,
                 verbose: bool = False, plays: str | None = None,
                 wire: WireName = "openai") -> None:
        if plays is not None and plays not in REFERENCE_VARIANTS:
            raise ValueError(f"unknown reference variant {plays!r}")
        self.wire: Wire = wire_named(wire)
        super().__init__((HOST, port), _Handler)
        self.plays = plays
        self.faults = faults
        self.verbose = verbose
        self.stopping = threading.Event()
        self.counts: dict[str, int] = {}
        self.received: deque[dict[str, Any]] = deque(maxlen=RECEIVED_KEPT)
        self.scripts = ScriptStore()
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
        """Keep a request's options (not its messages, tools or script), as a chat body."""
        options = {k: v for k, v in body.items()
                   if k not in ("messages", "tools", SCRIPT_KEY, SCRIPT_ID_KEY)}
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
    path_model = ""
    """The model the request's path names (Gemini's wire), "" when the body names it."""

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
        if path == SCRIPTS_PATH:
            self._register(raw)
            return
        try:
            path_model = self.server.wire.model_of(path)
            if path_model is None:
                raise RequestError(404, f"no route POST {path}", code="not_found")
            header = self.headers.get(FAULTS_HEADER)
            profile = parse_faults_header(header) if header else self.server.faults
        except RequestError as exc:
            self._send_error(exc)
            return
        decision = self.server.decide(profile)
        if self.server.stopping.wait(decision.delay_s):
            return
        self.path_model = path_model
        if not self._inject(decision, profile, raw):
            self._answer(raw)

    def _inject(self, decision: FaultDecision, profile: FaultProfile, raw: bytes) -> bool:
        """Apply an injected fault; True when the request is done with."""
        if decision.kind == "connection_drop":
            self.close_connection = True  # nothing written: the socket just closes
        elif decision.kind == "timeout":
            return self.server.stopping.wait(profile.timeout_sleep_s)
        else:
            error = self.server.wire.fault(decision.kind, profile, _words(raw))
            if error is not None:
                self._send_error(error)
        return decision.kind != "none"

    def _answer(self, raw: bytes) -> None:
        wire = self.server.wire
        try:
            body = json.loads(raw or b"null")
            if not isinstance(body, dict):
                raise RequestError(400, "the request body must be a JSON object")
            chat = self._with_script(wire.to_chat(body, self.path_model))
            self.server.record(chat)
            completion = chat_completion(chat, int(time.time()), self.server.plays)
            self._send_json(200, wire.from_chat(completion, cached_words(chat)))
        except json.JSONDecodeError as exc:
            self._send_error(RequestError(400, f"request body is not JSON: {exc.msg}"))
        except RequestError as exc:
            self._send_error(exc)

    def _register(self, raw: bytes) -> None:
        """Keep a script (the body); answer its id."""
        try:
            script = json.loads(raw or b"null")
        except json.JSONDecodeError as exc:
            self._send_error(RequestError(400, f"request body is not JSON: {exc.msg}"))
            return
        if not isinstance(script, dict):
            self._send_error(RequestError(400, "a script must be a JSON object"))
            return
        self._send_json(200, {"id": self.server.scripts.add(script)})

    def _with_script(self, chat: dict[str, Any]) -> dict[str, Any]:
        """The chat body with its script in place of the id it names (if it names one)."""
        key = chat.get(SCRIPT_ID_KEY)
        if key is None or SCRIPT_KEY in chat:
            return chat
        script = self.server.scripts.get(str(key))
        if script is None:
            raise RequestError(400, f"{UNKNOWN_SCRIPT} {key!r}: register the script first "
                                    f"(POST {SCRIPTS_PATH})", SCRIPT_ERROR_TYPE)
        return {**chat, SCRIPT_KEY: script}

    def _send_error(self, exc: RequestError, headers: dict[str, str] | None = None) -> None:
        self._send_json(exc.status, self.server.wire.error_body(exc),
                        {**exc.headers, **(headers or {})})

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
        """What LiteLLM is given as ``api_base`` for this server's wire format."""
        return f"http://{HOST}:{self.port}{self.server.wire.base_path}"

    @property
    def wire(self) -> WireName:
        return self.server.wire.name

    @property
    def counts(self) -> dict[str, int]:
        """Generate requests served so far, by fault decision ("none" = normal answer)."""
        return dict(self.server.counts)

    @property
    def received(self) -> list[dict[str, Any]]:
        """Options of the requests answered so far, as chat bodies (see ``RECEIVED_KEPT``)."""
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
                 verbose: bool = False, plays: str | None = None,
                 wire: WireName = "openai") -> ServerHandle:
    """Serve on 127.0.0.1:``port`` (0: any free port) in a daemon thread; returns at once."""
    server = ReferenceHTTPServer(port, faults or NO_FAULTS, seed, verbose, plays, wire)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              name=f"reference-server-{server.port}", daemon=True)
    thread.start()
    return ServerHandle(server, thread)


def serve_forever(port: int, faults: FaultProfile | None = None, seed: int | None = 0,
                  on_ready: Callable[[int], None] | None = None,
                  plays: str | None = None, wire: WireName = "openai") -> None:
    """Serve in the foreground until KeyboardInterrupt (Ctrl-C), then close cleanly."""
    server = ReferenceHTTPServer(port, faults or NO_FAULTS, seed, verbose=True, plays=plays,
                                 wire=wire)
    if on_ready is not None:
        on_ready(server.port)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
