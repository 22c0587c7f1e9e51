"""A TCP forwarder on loopback that can be stopped and started again on the same port: an S3
endpoint (moto's server behind it) that goes away and comes back. Stopped, it refuses new
connections and resets the open ones."""

from __future__ import annotations

import socket
import threading
from contextlib import suppress

from helpers.s3_server import free_port


class TcpForwarder:
    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = free_port()
        self._listener: socket.socket | None = None
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def stop(self) -> None:
        """Refuse connections from now on; the open ones are reset."""
        with self._lock:
            listener, self._listener = self._listener, None
            conns, self._open = self._open, set()
        if listener is not None:
            with suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        for conn in conns:  # shut down first: close() alone wakes no thread blocked in recv,
            with suppress(OSError):  # and the client would wait out its read timeout (60 s)
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target_port))
            with self._lock:
                if self._listener is not listener:
                    client.close()
                    server.close()
                    return
                self._open |= {client, server}
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        with suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with suppress(OSError):
            sink.shutdown(socket.SHUT_WR)
