"""The local Ray a run starts runs only the processes a run uses (pipeline.runtime.local_ray):
no autoscaler monitor, no log monitor, no prestarted idle worker, the dashboard head with its
usage-stats module only, agentsweep's stand-ins for Ray's two agents; and it still runs tasks
with the workers' variables, reports a worker's error to the driver and stops every process it
started. The stack's head leaves the dashboard head out too
(tests/e2e/test_doors.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.ray_processes import LEAN, kind_of, node_processes

from pipeline.runtime.local_ray import LEAN_START_FLAGS
from pipeline.runtime.ray_start import LeanNode
from pipeline.runtime.stack import _dashboard_flags

REPO = Path(__file__).resolve().parents[3]

PROBE = """
import json, os, time
from pipeline.runtime import hygiene
hygiene.apply()
from pipeline.execution.executor import ray_session
from helpers.ray_processes import node_processes
with ray_session(num_cpus=2, object_store_bytes=80 * 1024 * 1024) as ray:
    time.sleep(3)  # a prestarted worker would be up by now
    before = node_processes(os.environ["RAY_TMPDIR"])
    @ray.remote
    def fails():
        raise ValueError("raised in a worker")
    try:
        ray.get(fails.remote())
        error = ""
    except Exception as exc:
        error = str(exc)
    @ray.remote
    def environment():
        return {k: os.environ.get(k) for k in ("HTTP_PROXY", "LITELLM_LOCAL_MODEL_COST_MAP")}
    worker_env = ray.get(environment.remote())
print(json.dumps({"before": before, "error": error, "worker_env": worker_env}))
"""


@pytest.fixture
def ray_temp() -> Iterator[str]:
    path = tempfile.mkdtemp(prefix="asw-lean-", dir="/tmp")  # Ray's socket paths stay short
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.slow  # starts a local Ray
def test_a_runs_local_ray_starts_no_monitor_dashboard_or_idle_worker(ray_temp: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "PREFECT"))}
    env.update(RAY_TMPDIR=ray_temp, PYTHONPATH=f"{REPO}{os.pathsep}{REPO / 'tests'}")
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True,
                          text=True, env=env, cwd=REPO, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    kinds = sorted(kind_of(command) for command in seen["before"].values())
    assert set(kinds) == LEAN and len(kinds) == len(LEAN), kinds
    dashboard = next(c for c in seen["before"].values() if kind_of(c) == "dashboard")
    assert "--modules-to-load=UsageStatsHead" in dashboard  # the head, not the dashboard UI
    assert "raised in a worker" in seen["error"]  # errors reach the driver without a log monitor
    # the workers' variables, set up by the env-vars agent: the start-up's proxy cleared
    assert seen["worker_env"] == {"HTTP_PROXY": "", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    deadline = time.monotonic() + 60  # a hang guard
    while node_processes(ray_temp) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not node_processes(ray_temp), "the run's Ray outlived it"


def test_the_stacks_ray_head_is_started_as_lean_unless_the_dashboard_is_asked_for() -> None:
    lean = _dashboard_flags(None)
    assert {"--no-monitor", "--include-log-monitor=false", "--include-dashboard=false"} <= set(lean)
    assert any(flag.startswith("--system-config=") and "prestart_worker_first_driver" in flag
               for flag in lean)
    with_ui = _dashboard_flags(8266)
    assert "--include-dashboard=true" in with_ui and "--include-dashboard=false" not in with_ui
    assert {"--dashboard-host=127.0.0.1", "--dashboard-port=8266"} <= set(with_ui)
    assert set(LEAN_START_FLAGS) - {"--include-dashboard=false"} <= set(with_ui)


EARLY = """
import json, os, time
from pipeline.runtime import hygiene
hygiene.apply()
from pipeline.execution import executor
from helpers.ray_processes import node_processes
executor.start_local_ray_early(num_cpus=2, object_store_bytes=80 * 1024 * 1024)
time.sleep(8)  # the node's start-up is long over: a node tied to an ended thread would be gone
started = node_processes(os.environ["RAY_TMPDIR"])
with executor.ray_session(num_cpus=2, object_store_bytes=80 * 1024 * 1024) as ray:
    joined = node_processes(os.environ["RAY_TMPDIR"])
    @ray.remote
    def square(x):
        return x * x
    answer = ray.get(square.remote(7))
print(json.dumps({"started": started, "joined": joined, "answer": answer}))
"""


@pytest.mark.slow  # starts a local Ray
def test_a_local_ray_started_early_in_a_thread_outlives_the_thread_and_is_the_one_joined(
        ray_temp: str) -> None:
    """A cold run starts its Ray before importing Prefect (pipeline.cli.run); Ray ties its
    processes to the *thread* that started them, so that thread stays until the session ends."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "PREFECT"))}
    env.update(RAY_TMPDIR=ray_temp, PYTHONPATH=f"{REPO}{os.pathsep}{REPO / 'tests'}")
    done = subprocess.run([sys.executable, "-c", EARLY], capture_output=True,
                          text=True, env=env, cwd=REPO, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["answer"] == 49
    assert {kind_of(c) for c in seen["started"].values()} == LEAN
    # the session joined the early node: no second GCS or raylet was started
    assert set(seen["started"]) <= set(seen["joined"])
    assert sum(kind_of(c) == "gcs_server" for c in seen["joined"].values()) == 1
    deadline = time.monotonic() + 60  # a hang guard
    while node_processes(ray_temp) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not node_processes(ray_temp), "the early Ray outlived the run"


@pytest.mark.parametrize(("include_dashboard", "started"), [(False, False), (None, False),
                                                            (True, True)])
def test_a_lean_node_starts_the_dashboard_head_only_when_the_dashboard_is_asked_for(
        include_dashboard: bool | None, started: bool) -> None:
    from unittest import mock

    from ray._private.node import Node

    node = object.__new__(LeanNode)  # the method alone: no node is started
    with mock.patch.object(Node, "start_api_server") as ray_starts_it:
        node.start_api_server(include_dashboard=include_dashboard, raise_on_failure=False)
    assert ray_starts_it.called is started
