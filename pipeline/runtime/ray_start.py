"""``ray start`` with a lean head: ``python -m pipeline.runtime.ray_start start --head ...``.

Ray's own command, with two changes in this process only:

- its ``Node`` is ``LeanNode``: without ``--include-dashboard=true`` the head starts
  no dashboard head process (Ray 2.60 starts one on every head node; without the dashboard it
  loads only its usage-stats module, off here, and holds about 100 MiB);
- the raylet it starts runs pipeline/runtime/idle_dashboard_agent.py in place of Ray's
  dashboard agent when that agent would run minimal (it would do nothing but write its port
  files and wait: see that module). A full agent (Ray's dashboard extras installed) is kept.
  A run's own node gets the same agent (``local_ray.idle_dashboard_agents``).

The head waits for its raylet as ``AGENTSWEEP_RAY_START_TIMEOUT_S`` allows
(``local_ray.raylet_wait``); a head that does not start says why in one line on stderr (the
stack's ``ray.log``), stops the processes it started and exits 3.

``agentsweep up`` starts its Ray head this way.
"""

from __future__ import annotations

import os
import signal
import sys

import ray._private.node
from ray.scripts.scripts import main as ray_main

from pipeline.errors import ExitCode
from pipeline.runtime.local_ray import RayletWaitOver, idle_dashboard_agents, raylet_wait
from pipeline.runtime.startup import ray_start_timeout_s
from pipeline.util.procfs import pids, stat_fields


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
    try:
        with idle_dashboard_agents(), raylet_wait(ray_start_timeout_s()):
            ray_main()  # type: ignore[no-untyped-call]
    except RayletWaitOver as exc:
        sys.stderr.write(f"error: Ray's head did not start: {exc}\n")
        sys.stderr.flush()
        _stop_the_rest_of_this_session()
        raise SystemExit(ExitCode.INCOMPLETE) from None


def _stop_the_rest_of_this_session() -> None:
    """SIGKILL what this process started (the head's processes, in its session) when it leads
    a session of its own (``agentsweep up`` starts it so): a node whose raylet never registered
    is of no use, and its GCS would still answer on its port."""
    session, me = os.getsid(0), os.getpid()
    if session != me:  # started from a shell: its session is the user's
        return
    for pid in pids():
        fields = stat_fields(pid)
        if pid != me and fields is not None and int(fields[3]) == session:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


if __name__ == "__main__":
    main()
