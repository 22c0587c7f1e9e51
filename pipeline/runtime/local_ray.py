"""A local Ray with only the processes a run uses.

``ray.init()`` starts, beside the GCS server and the raylet, an autoscaler monitor, a log
monitor and one prestarted idle worker per CPU, none of which a run uses, and has no switch for
them. Ray's own ``Node``, with the ``RayParams`` that ``ray start --no-monitor
--include-log-monitor=false`` sets, has: a run joins such a node as a driver the way
``ray.cluster_utils.Cluster`` does, and the node shares the fate of this process like the one
``ray.init`` starts (the kernel's parent-death signal, Ray's reaper process).

The stack's head (``agentsweep up``) also starts no dashboard head unless asked for, and both
raylets run an idle stand-in for Ray's minimal dashboard agent (``idle_dashboard_agents``),
which writes the agent's port files at once instead of after importing all of Ray, and a
stand-in for Ray's runtime-env agent that sets up environment variables only
(pipeline/runtime/env_vars_agent.py). A run's own node keeps the dashboard head. What stays
in both: the GCS server and the raylet. Why, with the memory and start-up figures:
``docs/performance.md``.

A node waits for its raylet as long as ``AGENTSWEEP_RAY_START_TIMEOUT_S`` allows
(pipeline.runtime.startup) instead of Ray's fixed 30 s, and stops waiting as soon as its raylet
or GCS server has exited (``raylet_wait``). Ray's ``Node`` and ``RayParams`` are private: they
are pinned with Ray itself, and tests/unit/runtime/test_lean_ray.py fails if an upgrade brings
a process back or drops one."""

from __future__ import annotations

import json
import math
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pipeline.runtime.hygiene import RAY_START_PROXY
from pipeline.runtime.startup import ray_start_timeout_s

LEAN_SYSTEM_CONFIG: dict[str, Any] = {"prestart_worker_first_driver": False}
"""No idle workers prestarted when the first driver connects."""

LEAN_START_FLAGS = ("--include-dashboard=false", "--no-monitor", "--include-log-monitor=false",
                    f"--system-config={json.dumps(LEAN_SYSTEM_CONFIG)}")
"""The same node through ``ray start`` (``agentsweep up``)."""


@contextmanager
def proxied_environment() -> Iterator[None]:
    """The dead loopback proxy in this process's environment while Ray's processes start
    (pipeline.runtime.hygiene), restored afterwards."""
    saved = {key: os.environ.get(key) for key in RAY_START_PROXY}
    os.environ.update(RAY_START_PROXY)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


AGENT_FLAG = "--dashboard_agent_command="
"""The raylet's flag that holds the dashboard agent's command line."""
IDLE_AGENT = str(Path(__file__).with_name("idle_dashboard_agent.py").resolve())
ENV_AGENT_FLAG = "--runtime_env_agent_command="
"""The raylet's flag that holds the runtime-env agent's command line."""
ENV_VARS_AGENT = str(Path(__file__).with_name("env_vars_agent.py").resolve())


def ray_agent() -> str:
    """Ray's dashboard agent, named as ray._private.services names it in the command."""
    from ray._private import services

    return os.path.join(services.RAY_PATH, "dashboard", "agent.py")


def ray_env_agent() -> str:
    """Ray's runtime-env agent, named as ray._private.services names it in the command."""
    from ray._private import services

    return os.path.join(services.RAY_PATH, "_private", "runtime_env", "agent", "main.py")


def _swapped(arg: str, flag: str, ray_path: str, ours: str) -> str:
    command = arg[len(flag):]
    quoted = subprocess.list2cmdline([ray_path])
    return flag + command.replace(quoted, subprocess.list2cmdline([ours]), 1)


def with_idle_agent(raylet_command: list[str]) -> list[str]:
    """The raylet's command line, its minimal dashboard agent replaced by the idle one and,
    on such a lean node, its runtime-env agent by the one of environment variables only
    (pipeline/runtime/env_vars_agent.py). A full dashboard agent (Ray's dashboard extras
    installed) keeps both of Ray's agents."""
    ray_agent_path = ray_agent()
    lean = any(arg.startswith(AGENT_FLAG) and " --minimal" in arg and ray_agent_path in arg
               for arg in raylet_command)
    if not lean:
        return list(raylet_command)
    env_agent_path = ray_env_agent()
    changed = []
    for arg in raylet_command:
        if arg.startswith(AGENT_FLAG):
            arg = _swapped(arg, AGENT_FLAG, ray_agent_path, IDLE_AGENT)
        elif arg.startswith(ENV_AGENT_FLAG) and env_agent_path in arg:
            arg = _swapped(arg, ENV_AGENT_FLAG, env_agent_path, ENV_VARS_AGENT)
        changed.append(arg)
    return changed


@contextmanager
def idle_dashboard_agents() -> Iterator[None]:
    """While the block runs, a raylet this process starts runs the idle dashboard agent in
    place of Ray's minimal one (pipeline/runtime/idle_dashboard_agent.py), and the env-vars
    agent in place of its runtime-env agent (``with_idle_agent``)."""
    from ray._private import ray_constants, services

    start = services.start_ray_process

    def start_ray_process(command: list[str], process_type: str, *args: Any,
                          **kwargs: Any) -> Any:
        if process_type == ray_constants.PROCESS_TYPE_RAYLET:
            command = with_idle_agent(command)
        return start(command, process_type, *args, **kwargs)

    services.start_ray_process = start_ray_process
    try:
        yield
    finally:
        services.start_ray_process = start


GCS_PORT_WAIT_ENV = "RAY_gcs_server_port_wait_time_s"
"""Ray's own setting of how long a head waits for its GCS server's port (30 s by default)."""


class RayletWaitOver(Exception):  # not a RuntimeError: Ray's own wait catches those
    """A starting node's raylet did not register in time, or a process it needs exited."""


@contextmanager
def raylet_wait(timeout_s: float) -> Iterator[None]:
    """While the block runs, a node this process starts waits up to ``timeout_s`` for its
    raylet to register with the GCS (Ray's ``Node`` waits 30 s, a constant), and gives up at
    once when its raylet or GCS server exits; ``RayletWaitOver`` says which. The GCS server's
    port gets as long (``RAY_gcs_server_port_wait_time_s``, unless set). Ray asks
    ``services.get_node`` until the node is known, and gives up when it has failed for 30 s:
    here one call asks again until the node is known or the wait is over."""
    from ray._private import ray_constants, services

    ask, start = services.get_node, services.start_ray_process
    watched = (ray_constants.PROCESS_TYPE_RAYLET, ray_constants.PROCESS_TYPE_GCS_SERVER)
    started: list[tuple[str, subprocess.Popen[bytes]]] = []

    def start_ray_process(command: list[str], process_type: str, *args: Any,
                          **kwargs: Any) -> Any:
        info = start(command, process_type, *args, **kwargs)
        if process_type in watched:
            started.append((process_type, info.process))
        return info

    def get_node(gcs_address: str, node_id: str) -> Any:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                return ask(gcs_address, node_id)  # type: ignore[no-untyped-call]
            except RuntimeError:  # not registered yet
                pass
            for name, process in started:
                if process.poll() is not None:
                    raise RayletWaitOver(f"Ray's {name} exited with code {process.returncode} "
                                         "while the node started")
            if time.monotonic() >= deadline:
                raise RayletWaitOver(f"its raylet did not register within {timeout_s:g} s")
            time.sleep(0.1)

    services.start_ray_process, services.get_node = start_ray_process, get_node
    gcs_wait = os.environ.get(GCS_PORT_WAIT_ENV)
    if gcs_wait is None:  # the GCS server's own start: as long, never under Ray's 30 s
        os.environ[GCS_PORT_WAIT_ENV] = str(max(30, math.ceil(timeout_s)))
    try:
        yield
    finally:
        services.start_ray_process, services.get_node = start, ask
        if gcs_wait is None:
            os.environ.pop(GCS_PORT_WAIT_ENV, None)


def start_node(num_cpus: int | None, object_store_bytes: int, temp_dir: str) -> Any:
    """Start a head node on loopback with no monitors or prestarted workers; join
    it with ``ray.init(address=node.address)`` and end it with ``stop_node``."""
    from ray._private.authentication.authentication_token_setup import (
        enable_token_auth_by_default,
        ensure_token_if_auth_enabled,
    )
    from ray._private.node import Node
    from ray._private.parameter import RayParams

    config = dict(LEAN_SYSTEM_CONFIG)
    # Ray annotates include_log_monitor as a str but reads it as a flag (`ray start` passes a
    # bool); dashboard_port None, as ray.init does: 8265 or the next free port.
    params = RayParams(num_cpus=num_cpus, object_store_memory=object_store_bytes,
                       temp_dir=temp_dir, include_dashboard=False,
                       include_log_monitor=False,  # type: ignore[arg-type]
                       no_monitor=True, _system_config=config, dashboard_port=None)
    # What ray.init does before it starts a node: the token of RAY_AUTH_MODE=token.
    enable_token_auth_by_default()
    ensure_token_if_auth_enabled(config, create_token_if_missing=True)
    with proxied_environment(), idle_dashboard_agents(), raylet_wait(ray_start_timeout_s()):
        return Node(params, head=True, shutdown_at_exit=False, spawn_reaper=True,
                    ray_init_cluster=True)


def stop_node(node: Any) -> None:
    """Stop every process of a node started by ``start_node`` (gracefully first)."""
    node.kill_all_processes(check_alive=False, allow_graceful=True, wait=True)


class NodeStartError(RuntimeError):
    """A local Ray node's processes did not start (``RayletWaitOver``, or what else Ray
    raised: a bare ``Exception`` for most of its own failures)."""


class NodeInThread:
    """A node started by ``start_node`` in a thread of its own, while this process goes on (a
    cold run imports Prefect meanwhile). The thread lives as long as the node: the kernel's
    parent-death signal that ties Ray's processes to their starter follows the starting
    *thread*, so a thread that ended would take the node with it. ``node()`` waits for it;
    ``stop()`` ends it."""

    def __init__(self, num_cpus: int | None, object_store_bytes: int, temp_dir: str) -> None:
        self.params = (num_cpus, object_store_bytes, temp_dir)
        self._started = threading.Event()
        self._release = threading.Event()
        self._node: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._keep, name="ray-node", daemon=True)
        self._thread.start()

    def _keep(self) -> None:
        try:
            self._node = start_node(*self.params)
        except BaseException as exc:  # handed to the waiting thread by node()
            self._error = exc
        finally:
            self._started.set()
        if self._node is not None:
            self._release.wait()
            stop_node(self._node)

    def node(self) -> Any:
        """The started node; ``NodeStartError`` if its processes did not start (what else
        ``start_node`` raised, a Ctrl-C, as it was)."""
        self._started.wait()
        if isinstance(self._error, Exception):
            lines = str(self._error).strip().splitlines()
            raise NodeStartError(lines[0] if lines else repr(self._error)) from self._error
        if self._error is not None:
            raise self._error
        return self._node

    def stop(self) -> None:
        self._release.set()
        self._thread.join()
