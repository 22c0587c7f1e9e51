"""An S3 API on loopback for the object-storage warehouse tests: moto's standalone server.

Started once per session on 127.0.0.1 and a free port; each test gets a fresh bucket. The AWS
settings point every client (boto3, pyarrow) at it with dummy credentials, and the EC2
metadata service (169.254.169.254) is switched off, so no AWS address beyond loopback is ever
asked for anything.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

DUMMY_ENV = {
    "AWS_ACCESS_KEY_ID": "agentsweep-test-dummy",
    "AWS_SECRET_ACCESS_KEY": "agentsweep-test-dummy-secret",
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}
"""Dummy credentials and no metadata service or user config: nothing real is ever used."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def moto_server(timeout: float = 60.0) -> Iterator[str]:
    """moto's S3 server on loopback for the block; its endpoint URL."""
    port = free_port()
    server = Path(sys.executable).with_name("moto_server")
    env = {**os.environ, **DUMMY_ENV, "NO_PROXY": "127.0.0.1,localhost"}
    process = subprocess.Popen([str(server), "-H", "127.0.0.1", "-p", str(port)], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("moto_server did not start") from None
                time.sleep(0.2)
        yield endpoint
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
