"""The viewer's HTTP protocol: uvicorn's h11 one, but a connection that has not sent a whole
request within ``REQUEST_TIMEOUT_S`` of opening (or of its last answer) is closed. uvicorn times
out an idle kept-alive connection, not a slow one: a client dribbling header bytes would hold its
connection, and the server's, for as long as it likes."""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

REQUEST_TIMEOUT_S = 5.0
"""How long a connection may take to send a whole request's headers."""


class SlowClientsDropped(H11Protocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[arg-type]
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        before = self.cycle
        super().handle_events()
        if self.cycle is not before:  # a whole request arrived: its answer is under way
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # the next request (kept alive) has as long as the first

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(REQUEST_TIMEOUT_S, self._drop)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _drop(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            self.transport.close()
