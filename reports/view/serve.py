"""Serving the viewer with uvicorn on one address (127.0.0.1 unless told otherwise): the socket
is bound first, so the address printed is the one listening (port 0 picks a free one)."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from typing import Any

from reports.view.app import ViewOptions, create_app
from reports.view.data import runs_index
from warehouse.query import run_named

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host``:``port`` (OSError when it cannot be had)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def address_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def warm(options: ViewOptions) -> None:
    """DuckDB's views (the trends' too) bound over the warehouse's files now, and the runs
    index read, not on the first page asked for (~1 s each over a 1M-trial warehouse); both are
    kept until the files change."""
    run_named(options.root, "view_warm", all_runs=True)
    runs_index(options.root, options.clock(), None)  # the first page's rows, kept


def server_config(options: ViewOptions) -> Any:
    """uvicorn's configuration of the viewer: quiet, no server or date header, and slow
    clients dropped (``reports.view.slow_clients``)."""
    import uvicorn

    from reports.view.slow_clients import SlowClientsDropped

    return uvicorn.Config(create_app(options), log_level="warning", access_log=False,
                          server_header=False, date_header=False, lifespan="off",
                          http=SlowClientsDropped)


def serve(options: ViewOptions, sock: socket.socket,
          on_ready: Callable[[str], None] | None = None) -> None:
    """Answer on ``sock`` until interrupted (Ctrl-C), the views bound first."""
    import uvicorn

    warm(options)

    server = uvicorn.Server(server_config(options))
    if on_ready is not None:
        on_ready(address_of(sock))
    server.run(sockets=[sock])
