"""An agent service speaking agentsweep's HTTP agent protocol (docs/agents.md), standard library
only: it serves any Python agent written against the same contract, its tools reached over the
trial's ``tools_url``. No import of agentsweep.

    python examples/agents/http_service.py examples/agents/plain_openai.py:make --port 8701
    agentsweep run --agent http://127.0.0.1:8701 --model reference/golden

Routes: ``GET /info``; ``POST /sessions`` (the session's fields) -> ``{"session_id"}``;
``POST /sessions/<id>/messages`` ``{"content"}`` -> ``{"content"}``; ``DELETE /sessions/<id>``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import threading
import traceback
import urllib.request
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any

__version__ = "1.0"
Factory = Callable[[Any], Any]


def load_factory(name: str) -> Factory:
    """``path/to/file.py:attribute`` -> the attribute."""
    location, _, attribute = name.rpartition(":")
    spec = importlib.util.spec_from_file_location(f"served_{uuid.uuid4().hex}", location)
    if spec is None or spec.loader is None:
        raise SystemExit(f"{location}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, attribute)  # type: ignore[no-any-return]


def session_of(fields: dict[str, Any]) -> SimpleNamespace:
    """The session a Python agent gets, its ``call_tool`` going over ``tools_url``."""

    def call_tool(name: str, arguments: dict[str, Any]) -> str:
        request = urllib.request.Request(
            f"{fields['tools_url']}/{name}", data=json.dumps(arguments).encode(),
            headers={"Authorization": f"Bearer {fields['api_key']}",
                     "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as answer:  # noqa: S310 (loopback)
            return json.dumps(json.loads(answer.read())["result"], ensure_ascii=False,
                              sort_keys=True)

    return SimpleNamespace(**fields, call_tool=call_tool)


class AgentService(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, factory: Factory, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__((host, port), _Handler)
        self.factory = factory
        self.agents: dict[str, Any] = {}
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://{self.server_address[0]}:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: AgentService
    disable_nagle_algorithm = True  # headers and body leave at once (no 40 ms ACK wait)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def do_GET(self) -> None:  # noqa: N802
        if self.path == "/info":
            self._json(200, {"name": "http_service example", "version": __version__})
        else:
            self._json(404, {"error": "no such route"})

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        try:
            if self.path == "/sessions":
                session_id = uuid.uuid4().hex
                agent = self.server.factory(session_of(body))
                with self.server.lock:
                    self.server.agents[session_id] = agent
                self._json(200, {"session_id": session_id})
            elif self.path.startswith("/sessions/") and self.path.endswith("/messages"):
                with self.server.lock:
                    agent = self.server.agents[self.path.split("/")[2]]
                self._json(200, {"content": agent.respond(body["content"])})
            else:
                self._json(404, {"error": "no such route"})
        except Exception as exc:  # the agent failed: a 500 says so
            traceback.print_exc(file=sys.stderr)
            self._json(500, {"error": f"{type(exc).__name__}: {exc}"})

    def do_DELETE(self) -> None:  # noqa: N802
        with self.server.lock:
            agent = self.server.agents.pop(self.path.split("/")[-1], None)
        close = getattr(agent, "close", None)
        if callable(close):
            close()
        self._json(200, {})

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("agent", help="path/to/file.py:attribute")
    parser.add_argument("--port", type=int, default=8701)
    args = parser.parse_args()
    service = AgentService(load_factory(args.agent), port=args.port)
    print(f"serving {args.agent} at {service.url}", flush=True)
    service.serve_forever()


if __name__ == "__main__":
    main()
