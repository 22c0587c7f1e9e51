"""The local model server: llama.cpp (xllamacpp, in process) behind an OpenAI-compatible front.

``LocalModelServer`` loads a verified GGUF into ``xllamacpp.Server`` with the model's corrected
chat template and serves ``POST /v1/chat/completions``, ``GET /v1/models`` and ``GET /health``
on 127.0.0.1 (a free port by default). Every completion goes through llama.cpp's own chat
handling, then through the tool-call adapter (``pipeline.local.adapter``) when the request
offered tools. Responses report:

- ``model``: the GGUF's sha256 (it becomes ``model_version`` on every trial row);
- ``system_fingerprint``: runtime and version, chat-template hash, the tool-call adapter and
  the agent's adaptation (provenance: recorded as ``trials.system_fingerprint``);
- ``usage``: prompt and completion tokens as llama.cpp counted them; ``timings`` too.

Errors come back in OpenAI's error shape, so LiteLLM classifies them as it would a provider's:
a prompt over the context size is ``context_length_exceeded`` (400). The front is written once
here; nothing in the trial path knows that a model is local.
"""

from __future__ import annotations

import importlib.util
import json
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from pipeline.local.adapter import ADAPTER_ID, LOCAL_AGENT, lift_tool_calls
from pipeline.local.catalog import (
    LocalModelSpec,
)
from pipeline.util.hashing import sha256_text

HOST = "127.0.0.1"
RUNTIME = "xllamacpp"
INTERNAL_PREFIX = "agentsweep_"
"""Request fields our own callers add (call tags); never passed to llama.cpp."""


@dataclass(frozen=True)
class ServeOptions:
    """How the model is served. ``slots`` requests run at once, each with ``ctx_per_slot``
    tokens of context; ``threads`` CPU threads compute for all of them."""

    port: int = 0
    slots: int = 1
    threads: int = 1
    ctx_per_slot: int = 8192
    max_tokens: int = 1024
    """Cap on generated tokens per request when the request sets none."""

    @classmethod
    def for_cpus(cls, cpus: int, port: int = 0) -> ServeOptions:
        """Slots and threads sized to a node's CPUs (one slot and one thread per CPU)."""
        cpus = max(1, cpus)
        return cls(port=port, slots=cpus, threads=cpus)


def runtime_version() -> str:
    import xllamacpp

    return f"{RUNTIME}-{xllamacpp.__version__}"


class LocalModelServer:
    """One model, served until ``stop``; a context manager."""

    def __init__(self, spec: LocalModelSpec, gguf: os.PathLike[str] | str,
                 options: ServeOptions | None = None) -> None:
        self.spec = spec
        self.gguf = str(gguf)
        self.options = options or ServeOptions()
        # Read by libgomp when llama.cpp is first loaded: idle threads sleep instead of spinning
        # (two spinning threads on a shared 2-CPU machine collapsed generation speed).
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        template = spec.template_text()
        self.fingerprint = (f"{runtime_version()};template-sha256:{sha256_text(template)[:12]};"
                            f"adapter:{ADAPTER_ID};agent:{LOCAL_AGENT.name}")
        self._template = template
        self._engine: Any = None
        self._http: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        if self._http is None:
            raise RuntimeError("server is not started")
        return int(self._http.server_address[1])

    @property
    def api_base(self) -> str:
        return f"http://{HOST}:{self.port}/v1"

    def start(self) -> LocalModelServer:
        self._engine = self._load()
        self._http = _Front((HOST, self.options.port), _handler_for(self))
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, name="local-model",
                                        daemon=True)
        self._thread.start()
        return self

    def _load(self) -> Any:
        import xllamacpp

        params = xllamacpp.CommonParams()
        params.model.path = self.gguf
        params.model_alias = self.spec.name
        params.chat_template = self._template
        params.use_jinja = True
        params.n_parallel = self.options.slots
        params.n_ctx = self.options.ctx_per_slot * self.options.slots
        params.n_predict = self.options.max_tokens
        params.cpuparams.n_threads = self.options.threads
        params.cpuparams_batch.n_threads = self.options.threads
        params.hostnames = [HOST]  # llama.cpp's own listener: loopback, any port, unused
        params.port = 0
        params.verbosity = -1
        return xllamacpp.Server(params)

    def stop(self) -> None:
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None
        self._engine = None  # the engine's destructor stops llama.cpp's loop

    def __enter__(self) -> LocalModelServer:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()

    def complete(self, body: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        """One chat completion: (HTTP status, OpenAI-shaped body)."""
        request = {k: v for k, v in body.items()
                   if not k.startswith(INTERNAL_PREFIX) and k != "metadata"}
        request["stream"] = False
        try:
            response: dict[str, Any] = self._engine.handle_chat_completions(request)
        except ValueError as exc:
            return 400, _error(str(exc), "invalid_request_error")
        if "error" in response:
            return _engine_error(response["error"])
        names = {t.get("function", {}).get("name") for t in request.get("tools") or []}
        for choice in response.get("choices", []):
            if lift_tool_calls(choice.get("message", {}), {n for n in names if n}):
                choice["finish_reason"] = "tool_calls"
        response["model"] = self.spec.gguf_sha256
        response["system_fingerprint"] = self.fingerprint
        return 200, response


class _Front(ThreadingHTTPServer):
    request_queue_size = 256  # every trial of a node may connect at once


def _error(message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": code}}


def _engine_error(error: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
    status = int(error.get("code") or 500)
    message = str(error.get("message") or "local model error")
    if error.get("type") == "exceed_context_size_error":
        # OpenAI's wording, which LiteLLM maps to ContextWindowExceededError.
        message = (f"This model's maximum context length is {error.get('n_ctx')} tokens. "
                   f"However, your messages resulted in {error.get('n_prompt_tokens')} tokens.")
        return 400, _error(message, "invalid_request_error", "context_length_exceeded")
    return status, _error(message, "invalid_request_error" if status < 500 else "server_error")


def _handler_for(server: LocalModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            if self.path.rstrip("/") in ("/health", "/v1/health"):
                self._send(200, {"status": "ok", "model": server.spec.model_id})
            elif self.path.rstrip("/") == "/v1/models":
                self._send(200, {"object": "list", "data": [
                    {"id": server.spec.name, "object": "model", "owned_by": "agentsweep"}]})
            else:
                self._send(404, _error(f"no route {self.path}", "invalid_request_error"))

        def do_POST(self) -> None:  # noqa: N802
            if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                self._send(404, _error(f"no route {self.path}", "invalid_request_error"))
                return
            try:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
            except (ValueError, json.JSONDecodeError) as exc:
                self._send(400, _error(f"body is not JSON: {exc}", "invalid_request_error"))
                return
            if not isinstance(body, dict):
                self._send(400, _error("body must be a JSON object", "invalid_request_error"))
                return
            self._send(*server.complete(body))

        def _send(self, status: int, payload: Mapping[str, Any]) -> None:
            data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            return  # requests are recorded by the caller, not logged here

    return Handler


RUNTIME_MISSING = ("the local model runtime (xllamacpp) is not installed: run `make setup-local` "
                   "(or `uv pip install --require-hashes -r requirements-local.lock`)")


def runtime_installed() -> bool:
    return importlib.util.find_spec("xllamacpp") is not None
