"""One HTTP connection pool per trial thread for LiteLLM's OpenAI-compatible calls and the
direct path's calls (``pipeline.models.direct``, every wire format it covers).

A worker runs each trial in a thread of its own, hundreds at once when a sweep is
latency-bound. LiteLLM hands every OpenAI-compatible call of a configuration one cached SDK
client over one ``httpx.Client`` with httpx's default limits: 100 connections, 20 kept alive,
behind one pool lock that every request takes twice; the other threads queue on it.
``PerThreadTransport`` gives each thread its own transport (``pipeline.models.lean_http``: the
standard library's HTTP/1.1 client; httpx's own when HTTP/2 is on): a trial's calls run one
after another, so each thread keeps one connection alive per endpoint and never waits for
another thread's. It is installed as LiteLLM's ``client_session`` (its documented way to supply
the HTTP client) unless a user supplied one; proxies from the environment, LiteLLM's TLS
verification and the SDK's timeouts still apply.

The client reads a response's cookies only when it sets one (``CookiesWhenSet``): httpx
otherwise builds a urllib request and response per answer to fill a cookie jar that APIs
without cookies never use. The figures behind both: docs/performance.md.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx

from pipeline.models import lean_http
from pipeline.models.loop_http import LoopTransport
from pipeline.runtime.as_coroutine import in_coroutine


class PerThreadTransport(httpx.BaseTransport):
    """An ``httpx`` transport that sends each request over the calling thread's own pool."""

    def __init__(self, **transport_options: Any) -> None:
        self._options = transport_options
        self._local = threading.local()
        self._every: list[httpx.BaseTransport] = []
        self._loops: dict[asyncio.AbstractEventLoop, LoopTransport] = {}
        self._lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self.current().handle_request(request)

    def current(self) -> httpx.BaseTransport:
        """The calling thread's transport (made on its first request); in a trial run as a
        coroutine, its event loop's (``pipeline.models.loop_http``) unless HTTP/2 is on."""
        if not self._options.get("http2") and in_coroutine():
            return self._loop_transport()
        transport: httpx.BaseTransport | None = getattr(self._local, "transport", None)
        if transport is None:
            transport = lean_http.transport(**self._options)
            self._local.transport = transport
            with self._lock:
                self._every.append(transport)
        return transport

    def _loop_transport(self) -> httpx.BaseTransport:
        loop = asyncio.get_running_loop()
        with self._lock:
            transport = self._loops.get(loop)
            if transport is None:
                transport = self._loops[loop] = LoopTransport(self._options.get("verify", True))
                self._every.append(transport)
        return transport

    def close(self) -> None:
        with self._lock:
            every, self._every = self._every, []
        for transport in every:
            transport.close()


class CookiesWhenSet(httpx.Cookies):
    """A client's cookie jar that reads only responses with a ``Set-Cookie`` header: the same
    cookies are kept, without the work for a response that sets none."""

    def extract_cookies(self, response: httpx.Response) -> None:
        if "set-cookie" in response.headers:
            super().extract_cookies(response)


_pooled: httpx.Client | None = None
_pooled_lock = threading.Lock()


def pooled_client() -> httpx.Client:
    """The process's client with a pool per thread (made on first use): LiteLLM's
    ``client_session`` and the direct path's (``pipeline.models.direct``)."""
    global _pooled
    with _pooled_lock:
        if _pooled is None:
            from litellm.llms.custom_httpx.http_handler import (
                get_ssl_configuration,
                http2_enabled,
            )

            http2 = http2_enabled()
            transport = PerThreadTransport(verify=get_ssl_configuration(http2=http2),
                                           http2=http2)
            client = httpx.Client(transport=transport, follow_redirects=True)
            client._cookies = CookiesWhenSet()  # the setter would wrap it in a plain Cookies
            _pooled = client
        return _pooled


def is_ours(session: Any) -> bool:
    """Whether ``session`` (LiteLLM's ``client_session``) is the one ``install`` set."""
    return session is not None and session is _pooled


def install(litellm: Any) -> None:
    """Give LiteLLM's OpenAI-compatible calls a client with a pool per thread, unless the user
    set ``litellm.client_session`` (then theirs is used as is)."""
    if litellm.client_session is not None:
        return
    litellm.client_session = pooled_client()
