"""A run's own Prefect API, started as soon as the run is known to need one.

A run without a stack (``agentsweep up``) and without ``PREFECT_API_URL`` gets an ephemeral
Prefect API. Left to Prefect, that API starts when the first flow does: after the driver has
imported Prefect, with nothing else to do meanwhile, its start-up (imports, database) on the
critical path of every cold run (docs/performance.md). Started here instead, in the same form
Prefect gives it (``uvicorn`` over ``prefect.server.api.server:create_app``, ephemeral, no UI,
on 127.0.0.1), it boots on another core while the driver imports Prefect and starts Ray; the
flow finds it through ``PREFECT_API_URL`` and waits for it only if it is not ready yet.

It stays ephemeral: it serves this process only, on the home's own database, and stops with
the run (or with this process). A run killed with SIGKILL leaves it to the next run in the home,
which stops it as it does Prefect's own (``prefect_state.stop_orphaned_apis``: same command
line, same environment marker).
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from pipeline.runtime.startup import PREFECT_START_ENV, StartError, prefect_start_timeout_s

API_FACTORY = "prefect.server.api.server:create_app"
"""In the command line of Prefect's API subprocesses (ephemeral, or ``prefect server start
--background``)."""
EPHEMERAL_MARK = b"PREFECT__SERVER_EPHEMERAL=1"
"""In the environment of an ephemeral API (one a client started for itself) only."""
HOST = "127.0.0.1"
STARTUP_TIMEOUT_ENV = PREFECT_START_ENV
EPHEMERAL_ENV = {"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1",
                 "PREFECT__SERVER_FINAL": "1", "PREFECT_API_BLOCKS_REGISTER_ON_START": "false"}
"""What Prefect's own ephemeral API gets (``SubprocessASGIServer``), and no registration of
Prefect's block types at start (no flow of ours uses a block; a fresh home paid ~1 CPU-s)."""


class PrefectApiError(StartError):
    """The run's own Prefect API did not come up."""

    def __init__(self, message: str) -> None:
        super().__init__(message, STARTUP_TIMEOUT_ENV)


class RunApi:
    """The ephemeral API of this process: started by ``start``, waited for by ``ready``."""

    def __init__(self, process: subprocess.Popen[bytes], url: str) -> None:
        self.process = process
        self.url = url
        self._ready = False

    def ready(self, timeout_s: float | None = None) -> None:
        """Wait until the API answers its health check (``PrefectApiError`` if it stopped or
        did not answer in time)."""
        if self._ready:
            return
        limit = timeout_s if timeout_s is not None else prefect_start_timeout_s()
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise PrefectApiError(f"the run's Prefect API stopped while starting (exit "
                                      f"{self.process.returncode})")
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as reply:
                    if reply.status == 200:
                        self._ready = True
                        return
            except OSError:
                pass
            time.sleep(0.05)
        raise PrefectApiError(f"the run's Prefect API did not answer within {limit:.0f} s")

    def stop(self, grace_s: float = 5.0) -> None:
        """Stop the API: what Prefect's log and event services still hold is sent first
        (``drain_prefect_services``), then the process is asked to stop, then killed."""
        if self.process.poll() is None:
            drain_prefect_services()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def kill(self) -> None:
        """End the API at once (a process that must leave now)."""
        if self.process.poll() is None:
            self.process.kill()


DRAIN_TIMEOUT_S = 30.0
"""How long the logs and events Prefect still holds may take to reach the API before it stops
(milliseconds on an idle machine)."""


def drain_prefect_services(timeout_s: float = DRAIN_TIMEOUT_S) -> None:
    """Send what Prefect's queue services (its API log worker, its events worker) still hold,
    while the API answers. Prefect drains them again when the interpreter exits, without a
    time limit: to an API that is gone, a pending batch is retried with backoff for minutes,
    and the run that has said its last line does not exit. Its flow engine drains the logs at
    a flow's end, but gives up after 5 s: on a busy machine a batch was still on its way."""
    if "prefect._internal.concurrency.services" not in sys.modules:
        return  # no service was ever started in this process
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    deadline = time.monotonic() + timeout_s
    for service in (APILogWorker, EventsWorker):
        service.drain_all(timeout=max(0.0, deadline - time.monotonic()))


_current: RunApi | None = None


def needed() -> bool:
    """This process would start an ephemeral API of Prefect's for its first flow: no API URL
    (no stack attached, none configured) and Prefect's default database."""
    return not any(os.environ.get(key) for key in (
        "PREFECT_API_URL", "PREFECT_API_DATABASE_CONNECTION_URL",
        "PREFECT_SERVER_DATABASE_CONNECTION_URL"))


def start() -> RunApi | None:
    """Start this process's ephemeral API (once) and point ``PREFECT_API_URL`` at it; None
    when the process has an API already (``needed``). Call before Prefect is imported: Prefect
    reads its settings once."""
    global _current
    if _current is not None:
        return _current
    if not needed():
        return None
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "--app-dir", str(_prefect_parent()), "--factory",
         API_FACTORY, "--host", HOST, "--port", str(port), "--log-level", "error",
         "--lifespan", "on"],
        env={**os.environ, **EPHEMERAL_ENV}, stdin=subprocess.DEVNULL)
    _current = RunApi(process, f"http://{HOST}:{port}/api")
    os.environ["PREFECT_API_URL"] = _current.url
    if "prefect.context" in sys.modules:  # Prefect read its settings already: again
        from prefect.context import refresh_global_settings_context

        refresh_global_settings_context()
    atexit.register(stop)
    return _current


def current() -> RunApi | None:
    """The API ``start`` started in this process, while it runs."""
    return _current


def stop() -> None:
    """Stop the run's API and forget its URL (a later flow in this process starts another)."""
    global _current
    if _current is None:
        return
    api, _current = _current, None
    api.stop()
    if os.environ.get("PREFECT_API_URL") == api.url:
        del os.environ["PREFECT_API_URL"]


def _prefect_parent() -> Path:
    spec = importlib.util.find_spec("prefect")
    if spec is None or spec.origin is None:
        raise PrefectApiError("Prefect is not installed")
    return Path(spec.origin).parent.parent


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])
