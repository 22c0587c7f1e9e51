"""HTTP/1.1 over the standard library's ``http.client``: the transport of one trial thread's
connections (``pipeline.models.http_pools``) when HTTP/2 is off.

httpx's own transport sends a request through httpcore's pool and h11's state machine, all in
Python: about 0.5 ms of CPU a request on loopback, against 0.15 ms for ``http.client``
(docs/performance.md). A trial thread sends one request at a time, so the pool and its locks
buy nothing here. ``LeanTransport`` keeps one keep-alive connection per origin (scheme, host,
port) for the thread that owns it, and answers as httpx's transport does: the same
``httpx.Response`` (status, headers in order, a body stream that ``Response.read`` decodes by
its ``Content-Encoding``), the same timeouts (connect, write, read of the request's
``timeout`` extension) and the same exception classes (``ConnectError``, ``ConnectTimeout``,
``WriteError``, ``ReadTimeout``, ``ReadError``, ``RemoteProtocolError``), so that LiteLLM and
the OpenAI SDK read a failure as before. A connection the server closed while it was idle is
seen before it is used again (it reads as readable) and replaced, as httpcore does.
"""

from __future__ import annotations

import http.client
import select
import socket
import ssl
from collections.abc import Iterator, Mapping
from typing import Any

import httpx

Origin = tuple[str, str, int]
"""Scheme, host and port."""

CHUNK_BYTES = 65_536


class LeanTransport(httpx.BaseTransport):
    """One thread's connections (a transport is never shared between threads)."""

    def __init__(self, verify: ssl.SSLContext | str | bool = True) -> None:
        self._verify = verify
        self._context: ssl.SSLContext | None = None
        self._connections: dict[Origin, http.client.HTTPConnection] = {}

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        origin = (url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80))
        timeouts: Mapping[str, float | None] = request.extensions.get("timeout", {})
        body = request.read()
        connection = self._connection(origin, timeouts.get("connect"))
        try:
            _send(connection, request, body, timeouts.get("write"))
            connection.sock.settimeout(timeouts.get("read"))
            try:
                response = connection.getresponse()
            except TimeoutError as exc:
                raise httpx.ReadTimeout(str(exc) or "timed out", request=request) from exc
            except (http.client.RemoteDisconnected, http.client.BadStatusLine) as exc:
                raise httpx.RemoteProtocolError(
                    "Server disconnected without sending a response.", request=request) from exc
            except OSError as exc:
                raise httpx.ReadError(str(exc), request=request) from exc
        except BaseException:
            self._drop(origin)
            raise
        return httpx.Response(
            status_code=response.status, headers=response.getheaders(),
            stream=_Body(self, origin, response, request),
            extensions={"http_version": b"HTTP/1.1",
                        "reason_phrase": response.reason.encode("ascii", "replace")})

    def close(self) -> None:
        for origin in list(self._connections):
            self._drop(origin)

    def _connection(self, origin: Origin, timeout: float | None) -> http.client.HTTPConnection:
        kept = self._connections.get(origin)
        if kept is not None and kept.sock is not None and not readable(kept.sock):
            return kept
        self._drop(origin)
        scheme, host, port = origin
        connection: http.client.HTTPConnection
        if scheme == "https":
            connection = http.client.HTTPSConnection(host, port, timeout=timeout,
                                                     context=self._ssl_context())
        else:
            connection = http.client.HTTPConnection(host, port, timeout=timeout)
        try:
            connection.connect()
        except TimeoutError as exc:
            raise httpx.ConnectTimeout(str(exc) or "timed out") from exc
        except OSError as exc:
            raise httpx.ConnectError(str(exc)) from exc
        connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._connections[origin] = connection
        return connection

    def _ssl_context(self) -> ssl.SSLContext:
        if self._context is None:
            self._context = (self._verify if isinstance(self._verify, ssl.SSLContext)
                             else httpx.create_ssl_context(verify=self._verify))
        return self._context

    def _drop(self, origin: Origin) -> None:
        connection = self._connections.pop(origin, None)
        if connection is not None:
            connection.close()

    def _done(self, origin: Origin, response: http.client.HTTPResponse) -> None:
        """A response read to its end: its connection stays for the next request unless the
        server said it closes it."""
        if response.will_close:
            self._drop(origin)


def _send(connection: http.client.HTTPConnection, request: httpx.Request, body: bytes,
          timeout: float | None) -> None:
    """The request line, the headers httpx built (Host included) and the body."""
    connection.sock.settimeout(timeout)
    try:
        connection.putrequest(request.method, request.url.raw_path.decode("ascii"),
                              skip_host=True, skip_accept_encoding=True)
        for name, value in request.headers.raw:
            connection.putheader(name, value)
        connection.endheaders(body or None)
    except TimeoutError as exc:
        raise httpx.WriteTimeout(str(exc) or "timed out", request=request) from exc
    except OSError as exc:
        raise httpx.WriteError(str(exc), request=request) from exc


def readable(sock: socket.socket) -> bool:
    """An idle keep-alive socket that reads as readable was closed by the server (or sent
    something unasked): it is not used again."""
    readable, _, _ = select.select([sock], [], [], 0)
    return bool(readable)


class _Body(httpx.SyncByteStream):
    """A response's body, read from its connection as httpx reads a stream."""

    def __init__(self, owner: LeanTransport, origin: Origin,
                 response: http.client.HTTPResponse, request: httpx.Request) -> None:
        self._owner = owner
        self._origin = origin
        self._response = response
        self._request = request

    def __iter__(self) -> Iterator[bytes]:
        while True:
            try:
                chunk = self._response.read(CHUNK_BYTES)
            except TimeoutError as exc:
                self._owner._drop(self._origin)
                raise httpx.ReadTimeout(str(exc) or "timed out", request=self._request) from exc
            except (http.client.IncompleteRead, http.client.HTTPException) as exc:
                self._owner._drop(self._origin)
                raise httpx.RemoteProtocolError(str(exc), request=self._request) from exc
            except OSError as exc:
                self._owner._drop(self._origin)
                raise httpx.ReadError(str(exc), request=self._request) from exc
            if not chunk:
                if self._response.length:  # the server closed before its Content-Length
                    self._owner._drop(self._origin)
                    raise httpx.RemoteProtocolError(
                        "peer closed connection without sending complete message body",
                        request=self._request)
                self._owner._done(self._origin, self._response)
                return
            yield chunk

    def close(self) -> None:
        if not self._response.isclosed():  # left unread: the connection cannot be reused
            self._owner._drop(self._origin)


def transport(verify: ssl.SSLContext | str | bool, http2: bool, **options: Any
              ) -> httpx.BaseTransport:
    """A thread's transport: ``LeanTransport`` for HTTP/1.1, httpx's own for HTTP/2."""
    if http2:
        return httpx.HTTPTransport(verify=verify, http2=True, **options)
    return LeanTransport(verify)
