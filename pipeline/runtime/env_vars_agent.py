"""What a raylet we start runs in place of Ray's runtime-env agent: environment variables only.

Ray's agent (``ray/_private/runtime_env/agent/main.py``) imports all of Ray and aiohttp to set
up any runtime environment (packages, working directories, containers, variables): about 80
MiB held for the node's life and 0.7 s of CPU at every node start. agentsweep's workers ask
for environment variables only (``pipeline.runtime.hygiene.WORKER_ENV``, a model server's
settings), and this stand-in answers exactly those, with the standard library: the endpoints
Ray's agent serves, the same protobuf messages (encoded here: three fields), and the context
Ray's agent builds for variables alone (``RuntimeEnvContext(env_vars=...)``, which the worker's
start applies). A runtime environment that asks for more is refused, and says why: Ray then
fails the task or actor with a ``RuntimeEnvSetupError`` carrying this message. Releasing an
environment is a no-op (there is nothing to remove) and the info endpoint lists none.

It listens where Ray's agent would (``--node-ip-address``, ``--runtime-env-agent-port``), writes
the port file the raylet waits for before it registers its node, and leaves with its raylet as
the idle dashboard agent does. Like Ray's agent with authentication off (agentsweep's default,
``RAY_AUTH_MODE=disabled``), it checks no token: it only echoes variables to whoever asks.

Run by path, as Ray runs its agent; pipeline.runtime.local_ray puts it in the command line of
a lean raylet (a node whose dashboard agent is the idle one)."""

from __future__ import annotations

import json
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from pipeline.runtime.idle_dashboard_agent import run_beside_raylet
from warehouse.atomic import write_text

PORT_NAME = "runtime_env_agent_port"
"""The port file's name (``<name>_<node id>`` in the session dir), as Ray names it
(``ray._raylet.RUNTIME_ENV_AGENT_PORT_NAME``; tests/unit/runtime/test_env_vars_agent.py)."""
STATUS_OK, STATUS_FAILED = 0, 1
"""``AgentRpcStatus``'s two values."""
SERVED_FIELDS = frozenset({"env_vars"})
"""The runtime environment fields this stand-in sets up (Ray's own markers, ``_ray_...``, are
not asked for and go unread)."""


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at += 1
        if not byte & 0x80:
            return value, at
        shift += 7


def decode_fields(data: bytes) -> dict[int, bytes | int]:
    """A protobuf message's fields by number (the last of a repeated one): a length-delimited
    field as its bytes, a varint as its value."""
    fields: dict[int, bytes | int] = {}
    at = 0
    while at < len(data):
        tag, at = _varint(data, at)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            fields[number], at = _varint(data, at)
        elif wire == 2:
            size, at = _varint(data, at)
            fields[number], at = data[at:at + size], at + size
        elif wire in (1, 5):
            at += 8 if wire == 1 else 4
        else:
            raise ValueError(f"protobuf wire type {wire} is not read here")
    return fields


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def encode_reply(status: int, error: str = "", context: str = "") -> bytes:
    """A ``GetOrCreateRuntimeEnvReply`` (fields 1, 2, 3) or a ``DeleteRuntimeEnvIfPossible``
    reply (1, 2): defaults left out, as protobuf writes them."""
    out = bytearray()
    if status:
        out += b"\x08" + _encode_varint(status)
    for number, text in ((2, error), (3, context)):
        if text:
            raw = text.encode()
            out += _encode_varint(number << 3 | 2) + _encode_varint(len(raw)) + raw
    return bytes(out)


def context_for(serialized_runtime_env: str) -> tuple[str | None, str]:
    """The serialized ``RuntimeEnvContext`` of a runtime environment of variables only, or
    None and why it is refused."""
    try:
        runtime_env = json.loads(serialized_runtime_env or "{}")
    except json.JSONDecodeError as exc:
        return None, f"the runtime environment is not JSON: {exc.msg}"
    if not isinstance(runtime_env, dict):
        return None, "the runtime environment is not a JSON object"
    beyond = sorted(k for k in set(runtime_env) - SERVED_FIELDS if not k.startswith("_"))
    if beyond:
        return None, (f"this node's runtime-env agent (agentsweep's) sets up environment "
                      f"variables only, not {', '.join(beyond)}; start the node with Ray's "
                      "own agent for those")
    variables = runtime_env.get("env_vars") or {}
    if not isinstance(variables, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in variables.items()):
        return None, "env_vars must map names to strings"
    return json.dumps({"env_vars": variables}), ""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/get_or_create_runtime_env":
            field = decode_fields(body).get(1, b"")
            context, why = context_for(field.decode() if isinstance(field, bytes) else "")
            reply = (encode_reply(STATUS_OK, context=context) if context is not None
                     else encode_reply(STATUS_FAILED, error=why))
        elif self.path == "/delete_runtime_env_if_possible":
            reply = encode_reply(STATUS_OK)
        elif self.path == "/get_runtime_envs_info":
            reply = b""  # no environment, a total of 0
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (its signature)
        pass  # quiet, as Ray's agent is at its default level


class _Server(ThreadingHTTPServer):
    daemon_threads = True


class _Server6(_Server):
    address_family = socket.AF_INET6


def serve(host: str, port: int) -> ThreadingHTTPServer:
    """The endpoints, answered in threads of this process from now on."""
    server = (_Server6 if ":" in host else _Server)((host, port), _Handler)
    threading.Thread(target=server.serve_forever, name="env-vars-agent", daemon=True).start()
    return server


def start(given: dict[str, str]) -> ThreadingHTTPServer:
    """Serve on the agent's address, then write its port file (the raylet then registers)."""
    server = serve(given["node-ip-address"], int(given.get("runtime-env-agent-port") or 0))
    write_text(Path(given["session-dir"]) / f"{PORT_NAME}_{given['node-id']}",
               str(server.server_address[1]))
    return server


def main(argv: list[str]) -> int:
    return run_beside_raylet(argv, "env-vars agent",
                             ("node-id", "session-dir", "node-ip-address"), start)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
