"""HTTP/1.1 on the event loop, for the model calls of trials run as coroutines
(pipeline.runtime.as_coroutine).

``LoopTransport`` is an ``httpx`` transport for synchronous callers (LiteLLM's handler, the
direct path) that sends a trial coroutine's request as a coroutine of the loop: the trial waits
(``wait_for``) while the loop runs the others. It answers as ``pipeline.models.lean_http``
does: the same ``httpx.Response`` (status, reason, headers in order, the body decoded by its
``Content-Encoding`` when read), the request's connect, write and read timeouts, and the same
exception classes (``ConnectError``, ``ConnectTimeout``, ``WriteError``, ``WriteTimeout``,
``ReadTimeout``, ``ReadError``, ``RemoteProtocolError``). Connections are kept alive per origin
and shared by the loop's trials, one request at a time each; an idle one the server closed is
seen before it is used again and replaced. The body is read whole before the trial resumes
(model replies are small and never streamed here).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from pipeline.models.lean_http import Origin, readable
from pipeline.runtime.as_coroutine import wait_for


@dataclass
class _Connection:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter

    def usable(self) -> bool:
        """Idle and still open: a socket that reads as readable while idle was closed by the
        server (or sent something unasked), whether or not the loop has read it yet."""
        sock = self.writer.get_extra_info("socket")
        return not (self.writer.is_closing() or self.reader.at_eof()
                    or sock is None or readable(sock))

    def close(self) -> None:
        self.writer.close()


@dataclass(frozen=True)
class _Head:
    status: int
    reason: str
    headers: list[tuple[bytes, bytes]]

    def header(self, name: bytes) -> bytes | None:
        return next((v for k, v in self.headers if k.lower() == name), None)


class LoopTransport(httpx.BaseTransport):
    """The connections of one event loop's trial coroutines."""

    def __init__(self, verify: ssl.SSLContext | str | bool = True) -> None:
        self._verify = verify
        self._context: ssl.SSLContext | None = None
        self._idle: dict[Origin, list[_Connection]] = {}

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return wait_for(self.send(request))

    async def send(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        origin = (url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80))
        timeouts: Mapping[str, float | None] = request.extensions.get("timeout", {})
        connection = await self._connection(origin, timeouts.get("connect"))
        try:
            await _write(connection, request, request.read(), timeouts.get("write"))
            head = await _read_head(connection.reader, request, timeouts.get("read"))
            body = await _read_body(connection.reader, head, request, timeouts.get("read"))
        except BaseException:
            connection.close()
            raise
        if (head.header(b"connection") or b"").lower() == b"close":
            connection.close()
        else:
            self._idle.setdefault(origin, []).append(connection)
        return httpx.Response(
            status_code=head.status, headers=head.headers, stream=httpx.ByteStream(body),
            extensions={"http_version": b"HTTP/1.1",
                        "reason_phrase": head.reason.encode("ascii", "replace")})

    def close(self) -> None:
        for connections in self._idle.values():
            for connection in connections:
                connection.close()
        self._idle.clear()

    async def _connection(self, origin: Origin, timeout: float | None) -> _Connection:
        idle = self._idle.get(origin, [])
        while idle:
            connection = idle.pop()
            if connection.usable():
                return connection
            connection.close()
        scheme, host, port = origin
        context = self._ssl_context() if scheme == "https" else None
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(host, port, ssl=context,
                                        server_hostname=host if context else None), timeout)
        except TimeoutError as exc:
            raise httpx.ConnectTimeout(str(exc) or "timed out") from exc
        except OSError as exc:
            raise httpx.ConnectError(str(exc)) from exc
        return _Connection(reader, writer)

    def _ssl_context(self) -> ssl.SSLContext:
        if self._context is None:
            self._context = (self._verify if isinstance(self._verify, ssl.SSLContext)
                             else httpx.create_ssl_context(verify=self._verify))
        return self._context


async def _write(connection: _Connection, request: httpx.Request, body: bytes,
                 timeout: float | None) -> None:
    """The request line, the headers httpx built (Host included) and the body."""
    lines = [f"{request.method} {request.url.raw_path.decode('ascii')} HTTP/1.1".encode()]
    lines += [name + b": " + value for name, value in request.headers.raw]
    if body and "content-length" not in request.headers:
        lines.append(b"Content-Length: " + str(len(body)).encode())
    connection.writer.write(b"\r\n".join(lines) + b"\r\n\r\n" + body)
    try:
        await asyncio.wait_for(connection.writer.drain(), timeout)
    except TimeoutError as exc:
        raise httpx.WriteTimeout(str(exc) or "timed out", request=request) from exc
    except OSError as exc:
        raise httpx.WriteError(str(exc), request=request) from exc


async def _read(step: Any, request: httpx.Request, timeout: float | None,
                disconnected: str) -> Any:
    """One read of the response, its failures as httpx names them."""
    try:
        return await asyncio.wait_for(step, timeout)
    except TimeoutError as exc:
        raise httpx.ReadTimeout(str(exc) or "timed out", request=request) from exc
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
        raise httpx.RemoteProtocolError(disconnected, request=request) from exc
    except OSError as exc:
        raise httpx.ReadError(str(exc), request=request) from exc


async def _read_head(reader: asyncio.StreamReader, request: httpx.Request,
                     timeout: float | None) -> _Head:
    raw = await _read(reader.readuntil(b"\r\n\r\n"), request, timeout,
                      "Server disconnected without sending a response.")
    status_line, *header_lines = raw[:-4].split(b"\r\n")
    parts = status_line.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise httpx.RemoteProtocolError(f"malformed status line {status_line[:80]!r}",
                                        request=request)
    headers = []
    for line in header_lines:
        name, colon, value = line.partition(b":")
        if not colon:
            raise httpx.RemoteProtocolError("malformed header line", request=request)
        headers.append((name.strip(), value.strip()))
    reason = parts[2].decode("latin-1") if len(parts) > 2 else ""
    return _Head(int(parts[1]), reason, headers)


async def _read_body(reader: asyncio.StreamReader, head: _Head, request: httpx.Request,
                     timeout: float | None) -> bytes:
    """The whole body: by ``Content-Length``, chunked, or to the connection's end."""
    short = "peer closed connection without sending complete message body"
    if head.status in (204, 304) or 100 <= head.status < 200 or request.method == "HEAD":
        return b""
    if (head.header(b"transfer-encoding") or b"").lower() == b"chunked":
        chunks: list[bytes] = []
        while True:
            size_line = await _read(reader.readuntil(b"\r\n"), request, timeout, short)
            try:
                size = int(size_line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise httpx.RemoteProtocolError("malformed chunk size", request=request) from None
            if size == 0:
                while (await _read(reader.readuntil(b"\r\n"), request, timeout, short)
                       != b"\r\n"):
                    pass  # trailers
                return b"".join(chunks)
            chunk = await _read(reader.readexactly(size + 2), request, timeout, short)
            chunks.append(chunk[:-2])
    length = head.header(b"content-length")
    if length is not None:
        if not length.isdigit():
            raise httpx.RemoteProtocolError("malformed Content-Length", request=request)
        body: bytes = await _read(reader.readexactly(int(length)), request, timeout, short)
        return body
    rest: bytes = await _read(reader.read(), request, timeout, short)
    return rest
