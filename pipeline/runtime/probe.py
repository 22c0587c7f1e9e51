"""Is a service still there: a TCP probe, and a Prefect API that went away told from a bug.

A sweep needs its Ray head and, while its flow runs, the Prefect API. When either dies
mid-run, what finished is saved; the user gets one line and the resume command, never a
connection error's traceback (pipeline.execution.head for Ray; ``prefect_api_lost`` here).
"""

from __future__ import annotations

import os
import socket
from urllib.parse import urlsplit


def port_answers(address: str, timeout_s: float = 1.0) -> bool:
    """A TCP connection to ``host:port`` is accepted."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            return True
    except (OSError, ValueError):
        return False


def prefect_api_lost(exc: BaseException) -> str | None:
    """The Prefect API's URL when ``exc`` (or what caused it) is a failed connection and that
    API does not answer now; None otherwise (a bug stays a bug)."""
    url = os.environ.get("PREFECT_API_URL")
    if not url or not _is_connection_failure(exc):
        return None
    parts = urlsplit(url)
    if parts.hostname is None:
        return None
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return None if port_answers(f"{parts.hostname}:{port}") else url


def _is_connection_failure(exc: BaseException) -> bool:
    import httpx

    current: BaseException | None = exc
    seen = 0
    while current is not None and seen < 20:
        if isinstance(current, (httpx.TransportError, ConnectionError)):
            return True
        current = current.__cause__ or current.__context__
        seen += 1
    return False


def prefect_lost_line(exc: BaseException, what: str, again: str) -> str | None:
    """The one line a door prints when the Prefect API went away during ``what`` (None: it
    did not); ``again`` is the command that finishes the work."""
    url = prefect_api_lost(exc)
    if url is None:
        return None
    from pipeline.runtime import prefect_api

    run_api = prefect_api.current()
    if run_api is not None and run_api.url == url:  # the run's own: nothing to start again
        return (f"error: the run's own Prefect API ({url}) stopped during {what}; every "
                f"finished trial is saved. Continue with: {again}")
    return (f"error: the Prefect server at {url} stopped answering during {what}; every "
            f"finished trial is saved. Start it again (agentsweep up), then: {again}")
