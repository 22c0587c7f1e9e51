"""The local stack: a Ray head and a Prefect server that stay up between runs.

``agentsweep up`` starts both on 127.0.0.1 (free ports) for ``AGENTSWEEP_HOME`` and records
them in ``AGENTSWEEP_HOME/stack/stack.json``; later runs in that home attach to them instead of
starting an ephemeral Ray and an ephemeral Prefect API each time, and their trial workers stay
warm between runs (pipeline.execution.executor). ``agentsweep down`` stops both. Each service runs
in a session of its own (``ray start``, ``prefect server start``), so stopping it means
signalling that session: nothing else on the machine is touched (``ray stop`` would stop every
Ray here). ``ray start`` is not kept running (``--block``) beside the node: it would be a Python
process of about 100 MiB that only waits; the node's processes keep its session id after it
exits.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from pipeline.runtime.hygiene import FORCED, RAY_START_PROXY, agentsweep_home, prepare_prefect_home
from pipeline.runtime.local_ray import LEAN_START_FLAGS
from pipeline.runtime.probe import port_answers
from pipeline.runtime.startup import (
    PREFECT_START_ENV,
    RAY_START_ENV,
    StartError,
    prefect_start_timeout_s,
    ray_start_timeout_s,
)
from pipeline.util.procfs import pids, stat_fields
from warehouse.atomic import write_text

HOST = "127.0.0.1"
RAY_SLACK_S = 60.0
"""Ray's head may take this long beyond its raylet wait (``AGENTSWEEP_RAY_START_TIMEOUT_S``):
``ray start`` imports Ray and starts the GCS before that wait begins."""
Say = Callable[[str], None]


class StackError(RuntimeError):
    """The stack cannot be started as asked (nothing was started)."""


class StackStartError(StackError, StartError):
    """A service of the stack did not come up (its log names why)."""


@dataclass(frozen=True)
class StackState:
    ray_address: str
    ray_temp_dir: str
    ray_session: int
    prefect_api_url: str
    prefect_session: int
    started_at: float
    ray_dashboard_url: str | None = None
    """Ray's dashboard, when the stack was started with one."""

    @property
    def prefect_ui_url(self) -> str:
        """The Prefect UI, served by the stack's Prefect server on loopback."""
        return self.prefect_api_url.removesuffix("/api")

    def ray_up(self) -> bool:
        return _session_alive(self.ray_session) and port_answers(self.ray_address)

    def prefect_up(self) -> bool:
        if not _session_alive(self.prefect_session):
            return False
        try:
            with urllib.request.urlopen(f"{self.prefect_api_url}/health", timeout=2) as reply:
                return bool(reply.status == 200)
        except OSError:
            return False


def stack_dir(home: Path | None = None) -> Path:
    return (home or agentsweep_home()) / "stack"


def read_state(home: Path | None = None) -> StackState | None:
    path = stack_dir(home) / "stack.json"
    try:
        return StackState(**json.loads(path.read_text("utf-8")))
    except (OSError, ValueError, TypeError):
        return None


def running(home: Path | None = None) -> StackState | None:
    """The stack of ``home`` when both its services answer, else None."""
    state = read_state(home)
    return state if state is not None and state.ray_up() and state.prefect_up() else None


def up(home: Path | None = None, cpus: int | None = None, say: Say = lambda _: None,
       dashboard: bool = False) -> StackState:
    """Start the stack of ``home`` (or return it when it already runs). Its Ray head runs only
    the processes runs use (pipeline.runtime.local_ray); ``dashboard`` adds Ray's dashboard
    on loopback (it needs ``ray[default]``)."""
    home = home or agentsweep_home()
    current = running(home)
    if current is not None:
        return current
    if dashboard:
        _check_dashboard_installed()
    down(home)  # whatever is left of a stack that no longer answers
    # A half-migrated Prefect database would make the server hang: set aside first.
    prepare_prefect_home(Path(_prefect_env(home)["PREFECT_HOME"]))
    folder = stack_dir(home)
    folder.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    waits = (ray_start_timeout_s(), prefect_start_timeout_s())
    ray_port, prefect_port = _free_port(), _free_port()
    temp_dir = f"/tmp/agentsweep-{hashlib.sha256(str(home).encode()).hexdigest()[:10]}"
    say("starting Ray head")
    dashboard_port = _free_port() if dashboard else None
    ray = _spawn([sys.executable, "-m", "pipeline.runtime.ray_start", "start", "--head",
                  f"--node-ip-address={HOST}", f"--port={ray_port}",
                  f"--num-cpus={cpus or os.cpu_count() or 1}",
                  *_dashboard_flags(dashboard_port),
                  f"--dashboard-agent-listen-port={_free_port()}",
                  f"--dashboard-agent-grpc-port={_free_port()}", "--disable-usage-stats",
                  f"--temp-dir={temp_dir}", "--object-store-memory=268435456"],
                 folder / "ray.log", {**_ray_env(), RAY_START_ENV: f"{waits[0]:g}"})
    say("starting Prefect server")
    prefect = _spawn([str(Path(sys.executable).parent / "prefect"), "server", "start",
                      "--host", HOST, "--port", str(prefect_port)],
                     folder / "prefect.log",
                     {**_prefect_env(home),
                      "PREFECT_UI_API_URL": f"http://{HOST}:{prefect_port}/api"})
    state = StackState(f"{HOST}:{ray_port}", temp_dir, ray, f"http://{HOST}:{prefect_port}/api",
                       prefect, time.time(),
                       f"http://{HOST}:{dashboard_port}" if dashboard_port else None)
    _write_state(folder, state)
    _wait(state, folder, started, waits)
    say(f"stack up in {time.monotonic() - started:.1f} s: Ray {state.ray_address}, "
        f"Prefect {state.prefect_api_url} (UI {state.prefect_ui_url})")
    return state


def _dashboard_flags(port: int | None) -> list[str]:
    """Ray's dashboard on loopback at ``port``, or the lean head without it."""
    if port is None:
        return list(LEAN_START_FLAGS)
    return [flag for flag in LEAN_START_FLAGS if not flag.startswith("--include-dashboard")] + [
        "--include-dashboard=true", f"--dashboard-host={HOST}", f"--dashboard-port={port}"]


def _check_dashboard_installed() -> None:
    try:
        import ray.dashboard.optional_deps  # noqa: F401
    except ImportError as exc:
        raise StackError(f"Ray's dashboard needs ray[default] ({exc}): install "
                         f"'ray[default]=={_ray_version()}' in this environment, or start the "
                         "stack without --dashboard") from exc


def _ray_version() -> str:
    from importlib.metadata import version

    return version("ray")


def down(home: Path | None = None) -> bool:
    """Stop the stack of ``home``; True if there was one."""
    state = read_state(home)
    if state is None:
        return False
    for session in (state.ray_session, state.prefect_session):
        _stop_session(session)
    (stack_dir(home) / "stack.json").unlink(missing_ok=True)
    return True


def attach(home: Path | None = None) -> StackState | None:
    """Point this process at the running stack (Prefect API, Ray address); None if none."""
    state = running(home)
    if state is None:
        return None
    os.environ["PREFECT_API_URL"] = state.prefect_api_url
    os.environ.setdefault("RAY_ADDRESS", state.ray_address)
    if "prefect.context" in sys.modules:
        # Prefect read its settings when it was imported (a flow module imports it first):
        # read them again, or its first flow would start an ephemeral API of its own.
        from prefect.context import refresh_global_settings_context

        refresh_global_settings_context()
    return state


def _wait(state: StackState, folder: Path, started: float,
          waits: tuple[float, float]) -> None:
    """Until both services answer; ``StackStartError`` (the stack stopped) when one stopped
    while starting or did not answer within its wait (Ray's, Prefect's)."""
    services = (("ray", state.ray_session, state.ray_up, waits[0] + RAY_SLACK_S, RAY_START_ENV),
                ("prefect", state.prefect_session, state.prefect_up, waits[1],
                 PREFECT_START_ENV))
    pending = list(services)
    while pending:
        for service in list(pending):
            name, session, answers, wait_s, setting = service
            if answers():
                pending.remove(service)
                continue
            log = folder / f"{name}.log"
            if not _session_alive(session):
                down(folder.parent)
                raise StackStartError(f"{_SERVICE[name]} stopped while starting"
                                      f"{_why(log)}: see {log}", setting)
            if time.monotonic() - started > wait_s:
                down(folder.parent)
                raise StackStartError(f"{_SERVICE[name]} did not answer within {wait_s:.0f} s: "
                                      f"see {log}", setting)
        time.sleep(0.2)


_SERVICE = {"ray": "the stack's Ray head", "prefect": "the stack's Prefect server"}


def _why(log: Path) -> str:
    """The reason a service wrote last in its log, when it is one line of ours (``error:``)."""
    try:
        lines = log.read_text("utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    last = lines[-1] if lines else ""
    return f" ({last.removeprefix('error: ')})" if last.startswith("error: ") else ""


def _write_state(folder: Path, state: StackState) -> None:
    write_text(folder / "stack.json", json.dumps(asdict(state), indent=2))


def _spawn(command: list[str], log: Path, env: dict[str, str]) -> int:
    with log.open("ab") as out:
        proc = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    return proc.pid  # its session id: it leads a session of its own


def _base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "PREFECT_API"))
           and k.lower() not in {"http_proxy", "https_proxy", "no_proxy"}}
    env.update(FORCED)
    return env


def _ray_env() -> dict[str, str]:
    # The single-machine switch keeps a head on 127.0.0.1 from dialling the machine's address;
    # the dead proxy catches the dashboard's cloud-metadata probe (pipeline.runtime.hygiene).
    return {**_base_env(), **RAY_START_PROXY, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
            "RAY_AUTH_MODE": "disabled"}


def _prefect_env(home: Path) -> dict[str, str]:
    """The server's environment; its UI is told the API's address apart (``PREFECT_UI_API_URL``:
    without it the UI asks 127.0.0.1:4200, not the stack's port, and shows no run)."""
    return {**_base_env(), "PREFECT_HOME": os.environ.get("PREFECT_HOME", str(home / "prefect")),
            "PREFECT_UI_ENABLED": "true", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_LOGGING_LEVEL": "WARNING"}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def session_pids(session: int) -> list[int]:
    """The live processes of a session (zombies, already dead, left out)."""
    found = []
    for pid in pids():
        fields = stat_fields(pid)
        if fields is not None and fields[0] != "Z" and int(fields[3]) == session:
            found.append(pid)  # state, session id
    return found


def _session_alive(session: int) -> bool:
    return bool(session_pids(session))


def _stop_session(session: int, grace_s: float = 15.0) -> None:
    """SIGTERM the session's leader while it runs (``prefect server start`` then stops its
    server), then everything left in the session (the processes of a Ray node, whose ``ray
    start`` has exited); SIGKILL whatever outlives that."""
    for leader_only, sig, wait in ((True, signal.SIGTERM, grace_s),
                                   (False, signal.SIGTERM, 5.0), (False, signal.SIGKILL, 5.0)):
        pids = session_pids(session)
        if not pids:
            return
        if leader_only and session not in pids:
            continue
        for pid in [session] if leader_only else pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait
        while session_pids(session) and time.monotonic() < deadline:
            time.sleep(0.2)
