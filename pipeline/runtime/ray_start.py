"""``ray start`` with a lean head: ``python -m pipeline.runtime.ray_start start --head ...``.

Ray's own command, with two changes in this process only:

- its ``Node`` is ``LeanNode``: without ``--include-dashboard=true`` the head starts
  no dashboard head process (Ray 2.60 starts one on every head node; without the dashboard it
  loads only its usage-stats module, off here, and holds about 100 MiB);
- the raylet it starts runs pipeline/runtime/idle_dashboard_agent.py in place of Ray's
  dashboard agent when that agent would run minimal (it would do nothing but write its port
  files and wait: see that module). A full agent (Ray's dashboard extras installed) is kept.
  A run's own node gets the same agent (``local_ray.idle_dashboard_agents``).

``agentsweep up`` starts its Ray head this way.
"""

from __future__ import annotations

import ray._private.node
from ray.scripts.scripts import main as ray_main

from pipeline.runtime.local_ray import idle_dashboard_agents


class LeanNode(ray._private.node.Node):
    """Ray's ``Node``, without the dashboard head unless its params ask for the dashboard
    (``include_dashboard`` True; Ray's None, "if it is installed", does not ask)."""

    def start_api_server(self, *, include_dashboard: bool | None,
                         raise_on_failure: bool) -> None:
        if include_dashboard:
            super().start_api_server(include_dashboard=include_dashboard,
                                     raise_on_failure=raise_on_failure)


def main() -> None:
    # `ray start` builds ray._private.node.Node(...): the lean one, in this process only.
    ray._private.node.Node = LeanNode  # type: ignore[misc]
    with idle_dashboard_agents():
        ray_main()  # type: ignore[no-untyped-call]


if __name__ == "__main__":
    main()
