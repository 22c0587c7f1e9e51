"""``ray start`` with a lean head: ``python -m pipeline.runtime.ray_start start --head ...``.

Ray's own command, with its ``Node`` replaced by ``local_ray.LeanNode`` for this process
only: without ``--include-dashboard=true`` the head starts no dashboard head process
(pipeline.runtime.local_ray). ``agentsweep up`` starts its Ray head this way.
"""

from __future__ import annotations

import ray._private.node
from ray.scripts.scripts import main as ray_main

from pipeline.runtime.local_ray import lean_node_class


def main() -> None:
    # `ray start` builds ray._private.node.Node(...): the lean one, in this process only.
    ray._private.node.Node = lean_node_class()  # type: ignore[misc]
    ray_main()  # type: ignore[no-untyped-call]


if __name__ == "__main__":
    main()
