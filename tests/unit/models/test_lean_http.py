"""``LeanTransport`` (a trial thread's) and ``LoopTransport`` (a trial coroutine's, on its event
loop) answer as httpx's own transport does: the same responses, the same reuse of a kept-alive
connection, the same exception classes, over plain HTTP and TLS. A small server on 127.0.0.1
plays each behaviour; every request goes through the three transports."""

from __future__ import annotations

import asyncio
import datetime
import gzip
import ipaddress
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from pipeline.models.lean_http import LeanTransport
from pipeline.models.loop_http import LoopTransport
from pipeline.runtime.as_coroutine import run_as_coroutine

Answer = Callable[[bytes], bytes | None]
"""A request's bytes to the response's bytes; None drops the connection unanswered."""


def _response(status: str, body: bytes, *headers: str) -> bytes:
    lines = [f"HTTP/1.1 {status}", *headers]
    if not any(h.lower().startswith("transfer-encoding") for h in headers):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


class Server:
    """Answers each request on a connection with ``answer``; counts connections and requests."""

    def __init__(self, answer: Answer, context: ssl.SSLContext | None = None,
                 hang_up_after: bool = False) -> None:
        self.answer = answer
        self.hang_up_after = hang_up_after
        """Close each connection after its first answer."""
        self.connections = 0
        self.requests: list[bytes] = []
        self.open: list[socket.socket] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._context = context
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        pending = b""
        if self._context is not None:
            try:
                sock = self._context.wrap_socket(sock, server_side=True)
            except (ssl.SSLError, OSError):  # the client refused the certificate
                sock.close()
                return
        self.open.append(sock)
        with sock:
            while True:
                while b"\r\n\r\n" not in pending:
                    try:
                        data = sock.recv(65536)
                    except OSError:
                        return
                    if not data:
                        return
                    pending += data
                head, _, pending = pending.partition(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                while len(pending) < length:
                    pending += sock.recv(65536)
                request, pending = head + b"\r\n\r\n" + pending[:length], pending[length:]
                self.requests.append(request)
                reply = self.answer(request)
                if reply is None:
                    return
                try:
                    sock.sendall(reply)
                except OSError:  # the client gave up waiting
                    return
                if self.hang_up_after:
                    return

    def url(self, path: str = "/v1/chat") -> str:
        scheme = "https" if self._context is not None else "http"
        return f"{scheme}://127.0.0.1:{self.port}{path}"

    def hang_up(self) -> None:
        """Close every connection from the server's side."""
        for sock in self.open:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:  # closed already
                pass

    def close(self) -> None:
        self._listener.close()
        self.hang_up()


@pytest.fixture
def serve() -> Iterator[Callable[..., Server]]:
    servers: list[Server] = []

    def start(answer: Answer, context: ssl.SSLContext | None = None,
              hang_up_after: bool = False) -> Server:
        servers.append(Server(answer, context, hang_up_after))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


class InCoroutine(httpx.Client):
    """A client over ``LoopTransport`` whose every request is sent from a trial coroutine."""

    def __init__(self, verify: ssl.SSLContext | bool) -> None:
        super().__init__(transport=LoopTransport(verify))
        self._loop = asyncio.new_event_loop()

    def send(self, request: httpx.Request, **options: object) -> httpx.Response:
        return self._loop.run_until_complete(run_as_coroutine(
            lambda: httpx.Client.send(self, request, **options)))  # type: ignore[arg-type]

    def close(self) -> None:
        self._loop.run_until_complete(run_as_coroutine(super().close))
        self._loop.close()


def both(verify: ssl.SSLContext | bool = True) -> list[httpx.Client]:
    """httpx's client over its own transport, over ``LeanTransport``, and over
    ``LoopTransport`` in a trial coroutine."""
    return [httpx.Client(transport=httpx.HTTPTransport(verify=verify)),
            httpx.Client(transport=LeanTransport(verify)), InCoroutine(verify)]


def reading(response: httpx.Response) -> tuple[int, str, list[tuple[str, str]], bytes]:
    headers = [(k, v) for k, v in response.headers.items() if k != "date"]
    return response.status_code, response.reason_phrase, headers, response.content


def test_answers_and_keeps_the_connection_as_httpx_does(serve: Callable[..., Server]) -> None:
    server = serve(lambda request: _response("200 OK", b'{"ok": true}',
                                             "Content-Type: application/json"))
    readings = []
    for client in both():
        with client:
            first = client.post(server.url(), content=b'{"q": 1}', headers={"x-k": "v"})
            second = client.post(server.url(), json={"q": 2})
            readings.append((reading(first), reading(second)))
    assert readings[0] == readings[1] == readings[2]
    assert readings[1][1][3] == b'{"ok": true}' and readings[1][1][0] == 200
    assert server.connections == 3  # one kept-alive connection per client
    assert server.requests[0] == server.requests[2] == server.requests[4]  # the same bytes
    assert server.requests[3].endswith(b'{"q":2}') and server.requests[5] == server.requests[3]


def test_chunked_gzipped_and_error_bodies_read_the_same(serve: Callable[..., Server]) -> None:
    packed = gzip.compress(b"hello " * 1000)
    chunked = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
    answers = iter([_response("200 OK", packed, "Content-Encoding: gzip"), chunked,
                    _response("429 Too Many Requests", b'{"error": "slow down"}',
                              "Retry-After: 2")] * 3)
    server = serve(lambda request: next(answers))
    readings = []
    for client in both():
        with client:
            readings.append([reading(client.get(server.url())) for _ in range(3)])
    assert readings[0] == readings[1] == readings[2]
    gzipped, parts, limited = readings[1]
    assert gzipped[3] == b"hello " * 1000 and parts[3] == b"hello world"
    assert limited[:2] == (429, "Too Many Requests") and ("retry-after", "2") in limited[2]
    assert server.connections == 3


def test_a_closed_or_idle_closed_connection_is_replaced(serve: Callable[..., Server]) -> None:
    server = serve(lambda request: _response("200 OK", b"x", "Connection: close")
                   if b"close-me" in request else _response("200 OK", b"y"))
    for client in both():
        with client:
            assert client.get(server.url("/close-me")).content == b"x"
            assert client.get(server.url()).content == b"y"  # a new connection
            server.hang_up()  # the server closes the idle kept-alive connection
            assert client.get(server.url()).content == b"y"
    assert server.connections == 9


def _failure(client: httpx.Client, url: str, timeout: float = 5.0) -> str:
    with client, pytest.raises(httpx.TransportError) as caught:
        client.post(url, content=b"{}", timeout=timeout)
    return type(caught.value).__name__


def test_failures_raise_the_same_exceptions(serve: Callable[..., Server]) -> None:
    with socket.socket() as probe:  # a port that was free a moment ago, now closed again
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    dropped = serve(lambda request: None)
    silent = serve(lambda request: (threading.Event().wait(1), b"")[1])
    half = serve(lambda request: b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort",
                 hang_up_after=True)
    seen = [(_failure(a, closed), _failure(b, dropped.url()), _failure(c, silent.url(), 0.3),
             _failure(d, half.url()))
            for a, b, c, d in zip(both(), both(), both(), both(), strict=True)]
    assert seen[0] == seen[1] == seen[2] == (
        "ConnectError", "RemoteProtocolError", "ReadTimeout", "RemoteProtocolError")


def _certificate(tmp_path: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A self-signed certificate for 127.0.0.1: the server's context and a client's that
    trusts it."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=1))
                   .add_extension(x509.SubjectAlternativeName(
                       [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
                   .sign(key, hashes.SHA256()))
    cert = tmp_path / "cert.pem"
    cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file = tmp_path / "key.pem"
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert, key_file)
    return server, ssl.create_default_context(cafile=str(cert))


def test_tls_is_verified_as_httpx_verifies_it(serve: Callable[..., Server],
                                              tmp_path: Path) -> None:
    server_context, trusting = _certificate(tmp_path)
    server = serve(lambda request: _response("200 OK", b"secret"), server_context)
    for client in both(trusting):
        with client:
            assert client.get(server.url()).content == b"secret"
    assert [_failure(client, server.url()) for client in both()] == ["ConnectError"] * 3
