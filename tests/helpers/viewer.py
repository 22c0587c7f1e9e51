"""The viewer (``agentsweep view``) served for a test: uvicorn in a thread on a socket bound
to 127.0.0.1, and the proxy through which the test's headless Chromium reaches it (the browser
runs in a network namespace with no network, its own loopback included: tests/helpers/browser.py
pauses every request and this process answers it from the server over this machine's loopback;
anything else fails and stays listed)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from helpers.browser import Served
from helpers.loopback_proxy import LoopbackProxy

from reports.view import ViewOptions, address_of, bind
from reports.view.serve import server_config


class Viewer:
    def __init__(self, origin: str) -> None:
        self.origin = origin
        self._proxy = LoopbackProxy(origin)

    @property
    def refused(self) -> list[str]:
        """URLs the page asked for beyond the viewer (each one failed)."""
        return self._proxy.refused

    def serve(self, url: str) -> Served | None:
        """A GET of the page, sent to the viewer on loopback (no proxy)."""
        return self._proxy.forward("GET", url, {}, None)


@contextmanager
def viewer(options: ViewOptions) -> Iterator[Viewer]:
    """The viewer over ``options.root`` answering on 127.0.0.1 until the block ends."""
    import uvicorn

    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(server_config(options))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the viewer did not start")
        time.sleep(0.02)
    try:
        yield Viewer(address_of(sock))
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
