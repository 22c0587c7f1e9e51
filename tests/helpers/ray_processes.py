"""The processes of one Ray node, by kind, read from /proc: what a lean node may run."""

from __future__ import annotations

from pipeline.util.procfs import cmdline, live_parents

KINDS = (  # (kind, a piece of its command line), first match wins
    ("log monitor", "log_monitor.py"),
    ("autoscaler monitor", "autoscaler/_private/monitor.py"),
    ("dashboard", "dashboard/dashboard.py"),
    ("dashboard agent", "ray::DashboardAgent"),
    ("runtime-env agent", "ray::RuntimeEnvAgent"),
    ("idle worker", "ray::IDLE"),
    ("gcs_server", "gcs_server"),
    ("raylet", "raylet/raylet"),  # its command line names the idle agent: it comes first
    ("idle dashboard agent", "idle_dashboard_agent.py"),
    ("env-vars agent", "env_vars_agent.py"),
    ("ray start wrapper", " start --block"),
)

LEAN = {"gcs_server", "raylet", "dashboard", "idle dashboard agent", "env-vars agent"}
"""What a run's own node (pipeline.runtime.local_ray.start_node) runs before any worker starts
(Ray 2.60 starts the dashboard head and both agents whatever it is told; the agents are
agentsweep's stand-ins, pipeline/runtime/idle_dashboard_agent.py for Ray's minimal dashboard
agent and pipeline/runtime/env_vars_agent.py for its runtime-env agent)."""
LEAN_STACK = LEAN - {"dashboard"}
"""What the stack's head runs (``agentsweep up``, through pipeline.runtime.ray_start): no
dashboard head either."""


def _children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for pid, parent in live_parents().items():
        children.setdefault(parent, []).append(pid)
    return children


def node_processes(temp_dir: str) -> dict[int, str]:
    """pid -> command line of every process naming ``temp_dir`` (the node's Ray temp dir) and
    of their descendants (the raylet's agents and workers name nothing)."""
    children = _children()
    every = [pid for pids in children.values() for pid in pids]
    found: dict[int, str] = {}
    stack = [pid for pid in every if temp_dir in cmdline(pid)]
    while stack:
        pid = stack.pop()
        if pid not in found:
            found[pid] = cmdline(pid)
            stack.extend(children.get(pid, []))
    return found


def kind_of(command: str) -> str:
    for kind, piece in KINDS:
        if piece in command:
            return kind
    return command[:80]
