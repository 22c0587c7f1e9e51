"""``ray start`` with a lean head: ``python -m pipeline.runtime.ray_start start --head ...``.

Ray's own command, with two changes in this process only:

- its ``Node`` is ``LeanNode``: without ``--include-dashboard=true`` the head starts
  no dashboard head process (Ray 2.60 starts one on every head node; without the dashboard it
  loads only its usage-stats module, off here, and holds about 100 MiB);
- the raylet it starts runs pipeline/runtime/idle_dashboard_agent.py in place of Ray's
  dashboard agent when that agent would run minimal (it would do nothing but write its port
  files and wait: see that module). A full agent (Ray's dashboard extras installed) is kept.

``agentsweep up`` starts its Ray head this way.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ray._private.node
import ray._private.services
from ray._private import ray_constants
from ray.scripts.scripts import main as ray_main

from pipeline.runtime import idle_dashboard_agent

AGENT_FLAG = "--dashboard_agent_command="
"""The raylet's flag that holds the dashboard agent's command line."""
RAY_AGENT = os.path.join(ray._private.services.RAY_PATH, "dashboard", "agent.py")
"""Ray's agent, named as ray._private.services names it in the command."""
IDLE_AGENT = str(Path(idle_dashboard_agent.__file__).resolve())


class LeanNode(ray._private.node.Node):
    """Ray's ``Node``, without the dashboard head unless its params ask for the dashboard
    (``include_dashboard`` True; Ray's None, "if it is installed", does not ask)."""

    def start_api_server(self, *, include_dashboard: bool | None,
                         raise_on_failure: bool) -> None:
        if include_dashboard:
            super().start_api_server(include_dashboard=include_dashboard,
                                     raise_on_failure=raise_on_failure)


def with_idle_agent(raylet_command: list[str]) -> list[str]:
    """The raylet's command line, its minimal dashboard agent replaced by the idle one."""
    changed = []
    for arg in raylet_command:
        agent = arg[len(AGENT_FLAG):] if arg.startswith(AGENT_FLAG) else ""
        if " --minimal" in agent and RAY_AGENT in agent:
            quoted = subprocess.list2cmdline([RAY_AGENT])
            arg = AGENT_FLAG + agent.replace(quoted, subprocess.list2cmdline([IDLE_AGENT]), 1)
        changed.append(arg)
    return changed


def _starting_idle_agents(start: Callable[..., Any]) -> Callable[..., Any]:
    def start_ray_process(command: list[str], process_type: str, *args: Any,
                          **kwargs: Any) -> Any:
        if process_type == ray_constants.PROCESS_TYPE_RAYLET:
            command = with_idle_agent(command)
        return start(command, process_type, *args, **kwargs)

    return start_ray_process


def main() -> None:
    # `ray start` builds ray._private.node.Node(...): the lean one, in this process only.
    ray._private.node.Node = LeanNode  # type: ignore[misc]
    services = ray._private.services
    services.start_ray_process = _starting_idle_agents(services.start_ray_process)
    ray_main()  # type: ignore[no-untyped-call]


if __name__ == "__main__":
    main()
