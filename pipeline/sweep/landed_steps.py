"""Steps that compact what has landed in a running sweep, run as Ray tasks beside its driver.

A reader of a running night (``agentsweep runs``, the viewer) opens every part committed so
far; ``warehouse.compact_landed`` merges them while the run goes on. The driver's part here is
to ask: every ``every_s`` of its ticks it submits one step as a Ray task (never two at once) and
looks at the last one's ref without waiting; the rewrite runs in a Ray worker. A folder
warehouse is read on the driver's node only, so the task is pinned there. A step that fails
leaves the run as it was (``warehouse.compact_landed``): it is said on ``say`` and the next
is tried at its time. On object storage no step is submitted yet (a Ray task there needs the
store's credentials on its node; ``agentsweep warehouse compact --landed`` runs one by hand).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from warehouse.location import Root

LANDED_EVERY_S = 300.0
"""Wall seconds between two steps of a running sweep: each rewrites what landed since."""


def _step(root: str, run_id: str) -> int:
    """One step (in a Ray worker); the part files it replaced."""
    from warehouse.compact_landed import compact_landed

    return sum(t.files_before for t in compact_landed(Path(root), run_id))


class LandedSteps:
    """Submits a step of ``compact_landed`` every ``every_s`` (``tick`` is called about every
    second by the driver's loop), at most one in flight."""

    def __init__(self, ray: Any, root: Root, run_id: str, node_id: str | None,
                 every_s: float = LANDED_EVERY_S, say: Callable[[str], None] = lambda _: None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.ray = ray
        self.root = root
        self.run_id = run_id
        self.node_id = node_id
        self.every_s = every_s
        self.say = say
        self.clock = clock
        self.started = clock()
        self.running: Any = None
        self.steps = 0

    @property
    def enabled(self) -> bool:
        return isinstance(self.root, Path)

    def tick(self) -> None:
        """Look at the step in flight (no wait); submit the next when it is due."""
        if not self.enabled:
            return
        if self.running is not None:
            done, _ = self.ray.wait([self.running], timeout=0)
            if not done:
                return
            self._finished(self.running)
            self.running = None
        if self.clock() - self.started >= self.every_s * (self.steps + 1):
            self.steps += 1
            self.running = self._submit()

    def _finished(self, ref: Any) -> None:
        try:
            self.ray.get(ref)
        except self.ray.exceptions.RayError as exc:  # the run is as it was; the next step tries
            self.say(f"compacting what landed in run {self.run_id} failed: "
                     f"{str(exc).strip().splitlines()[-1]}")

    def _submit(self) -> Any:
        return self.ray.remote(_step).options(**step_options(self.node_id)).remote(
            str(self.root), self.run_id)


def step_options(node_id: str | None) -> dict[str, Any]:
    """The Ray options of a compaction step: no CPU reserved (it must not wait behind the
    trials), never retried by Ray (a failed step leaves the run as it was), and pinned to
    ``node_id`` when given (the node whose disk holds a folder warehouse)."""
    options: dict[str, Any] = {"num_cpus": 0, "max_retries": 0}
    if node_id is not None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node_id, soft=False)
    return options
