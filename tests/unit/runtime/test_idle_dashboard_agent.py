"""A raylet we start runs the idle stand-in for Ray's minimal dashboard agent
(pipeline/runtime/idle_dashboard_agent.py, put there by local_ray.idle_dashboard_agents): it writes
the port files Ray's agent writes, as Ray names them, and leaves with its raylet. A full agent
is kept. Nodes running it end to end: tests/unit/runtime/test_lean_ray.py (a run's own),
tests/e2e/test_doors.py (the stack's)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import ray._raylet

from pipeline.runtime import idle_dashboard_agent
from pipeline.runtime.local_ray import AGENT_FLAG, IDLE_AGENT, ray_agent, with_idle_agent

NODE_ID = "ab" * 28
"""A node id as Ray writes it (28 bytes, hex)."""


def _agent_command(*extra: str) -> str:
    """The dashboard agent's command line, as ray._private.services builds it."""
    return subprocess.list2cmdline([sys.executable, "-u", ray_agent(), f"--node-id={NODE_ID}",
                                    "--node-ip-address=127.0.0.1", "--session-dir=/tmp/s",
                                    "--gcs-address=127.0.0.1:1", *extra])


def _raylet_command(agent: str) -> list[str]:
    runtime_env = subprocess.list2cmdline([sys.executable, "-u", "/x/runtime_env/agent/main.py",
                                           f"--node-id={NODE_ID}"])
    return ["/x/raylet/raylet", "--node_ip_address=127.0.0.1", AGENT_FLAG + agent,
            f"--runtime_env_agent_command={runtime_env}"]


def test_the_port_files_are_the_ones_ray_names() -> None:
    assert idle_dashboard_agent.PORT_NAMES == (ray._raylet.METRICS_AGENT_PORT_NAME,
                                               ray._raylet.METRICS_EXPORT_PORT_NAME,
                                               ray._raylet.DASHBOARD_AGENT_LISTEN_PORT_NAME)
    for name in idle_dashboard_agent.PORT_NAMES:
        assert ray._raylet.get_port_filename(NODE_ID, name) == f"{name}_{NODE_ID}"


def test_a_minimal_agent_is_replaced_and_everything_else_kept() -> None:
    minimal = _agent_command("--minimal", "--head")
    before = _raylet_command(minimal)
    after = with_idle_agent(before)
    assert after[2] == AGENT_FLAG + minimal.replace(ray_agent(), IDLE_AGENT)
    assert IDLE_AGENT in after[2] and ray_agent() not in after[2]
    assert after[:2] + after[3:] == before[:2] + before[3:]


def test_a_full_agent_is_kept() -> None:
    """Ray's dashboard extras installed (``agentsweep up --dashboard`` needs them): the agent
    serves metrics and the dashboard's APIs, so it stays."""
    before = _raylet_command(_agent_command("--head"))
    assert with_idle_agent(before) == before


def _agent_under_a_parent(session_dir: Path) -> subprocess.Popen[str]:
    """A parent process (the raylet's part) that starts the idle agent and waits."""
    child = [sys.executable, "-u", IDLE_AGENT, f"--node-id={NODE_ID}",
             f"--session-dir={session_dir}", "--metrics-export-port=0"]
    script = (f"import subprocess, sys, time; p = subprocess.Popen({child!r}); "
              "print(p.pid, flush=True); time.sleep(600)")
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _wait(condition: Callable[[], bool], timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.slow  # starts and kills Ray's dashboard agent stand-in with its parent
@pytest.mark.parametrize("parent_signal", [signal.SIGKILL, signal.SIGTERM])
def test_the_agent_writes_minus_one_ports_and_leaves_with_its_parent(
        tmp_path: Path, parent_signal: signal.Signals) -> None:
    parent = _agent_under_a_parent(tmp_path)
    try:
        assert parent.stdout is not None
        agent = int(parent.stdout.readline())
        files = [tmp_path / f"{name}_{NODE_ID}" for name in idle_dashboard_agent.PORT_NAMES]
        assert _wait(lambda: all(f.exists() for f in files))
        assert [f.read_text() for f in files] == ["-1"] * 3
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f.name for f in files)
        time.sleep(2 * idle_dashboard_agent.WATCH_S)
        assert _alive(agent)  # it waits while its parent lives
        parent.send_signal(parent_signal)
        assert _wait(lambda: not _alive(agent)), "the agent outlived its parent"
    finally:
        parent.kill()
        parent.wait()


def test_the_agent_stops_on_sigterm_and_refuses_missing_flags(tmp_path: Path) -> None:
    agent = subprocess.Popen([sys.executable, IDLE_AGENT, f"--node-id={NODE_ID}",
                              f"--session-dir={tmp_path}"])
    assert _wait(lambda: len(list(tmp_path.iterdir())) == 3)
    agent.send_signal(signal.SIGTERM)
    assert agent.wait(timeout=10) == 0
    refused = subprocess.run([sys.executable, IDLE_AGENT, f"--node-id={NODE_ID}"],
                             capture_output=True, text=True, timeout=30)
    assert refused.returncode == 2 and "--session-dir" in refused.stderr
