"""What a raylet we start (the stack's, and a run's own) runs in place of Ray's minimal dashboard
agent (``--minimal``: Ray's dashboard extras are not installed, as here).

Ray's minimal agent loads no module, serves no port and exports no metric: it writes -1 into the
node's three agent port files (the raylet waits for them before it registers the node), records
those ports in the GCS, and waits until its raylet is gone, after importing all of Ray. This
stand-in writes the same files at once and waits the same way with the standard library alone
(the memory and start-up it saves: ``docs/performance.md``). The raylet fate-shares with it as
with Ray's agent, so it exits only when its raylet is gone or it is told to stop.

Run by path, as Ray runs its agent (``python -u idle_dashboard_agent.py --node-id=... ...``):
of the project it imports only warehouse.atomic (the standard library alone).
pipeline.runtime.local_ray.idle_dashboard_agents puts it in the raylet's command line; a node
with Ray's dashboard extras installed keeps Ray's agent."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

from warehouse.atomic import write_text

PORT_NAMES = ("metrics_agent_port", "metrics_export_port", "dashboard_agent_listen_port")
"""The agent's port files (``<name>_<node id>`` in the session dir), as Ray names them
(``ray._raylet``; tests/unit/runtime/test_idle_dashboard_agent.py compares)."""
NOT_SERVED = -1
"""What Ray's minimal agent writes into each: the service is not running."""
WATCH_S = 1.0
"""How often the parent (the raylet) is checked, beside the kernel's parent-death signal."""
_PR_SET_PDEATHSIG = 1


def flags(argv: list[str]) -> dict[str, str]:
    """``--name=value`` arguments by name (Ray passes every one in that form)."""
    found: dict[str, str] = {}
    for arg in argv:
        if arg.startswith("--") and "=" in arg:
            name, value = arg[2:].split("=", 1)
            found[name] = value
    return found


def write_ports(session_dir: Path, node_id: str) -> None:
    """Each port file, whole or not at all (the raylet reads it as soon as it exists)."""
    for name in PORT_NAMES:
        write_text(session_dir / f"{name}_{node_id}", str(NOT_SERVED))


def die_with_parent() -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass  # the watch loop below still notices


def run_beside_raylet(argv: list[str], name: str, required: tuple[str, ...],
                      begin: Callable[[dict[str, str]], object]) -> int:
    """An agent's life: its ``--name=value`` flags checked (2 when one is missing), ``begin``
    given them, then a wait until its raylet is gone (or SIGTERM: 0)."""
    given = flags(argv)
    missing = [flag for flag in required if not given.get(flag)]
    if missing:
        print(f"{name}: missing {', '.join('--' + m for m in missing)}", file=sys.stderr)
        return 2
    raylet = os.getppid()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    die_with_parent()
    begin(given)
    while os.getppid() == raylet:
        time.sleep(WATCH_S)
    return 0


def main(argv: list[str]) -> int:
    return run_beside_raylet(argv, "idle dashboard agent", ("node-id", "session-dir"),
                             lambda given: write_ports(Path(given["session-dir"]),
                                                       given["node-id"]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
