"""Steps that compact what has landed in a running sweep, run as Ray tasks beside its driver.

A reader of a running night (``agentsweep runs``, the viewer) opens every part committed so
far; ``warehouse.compact_landed`` merges them while the run goes on. The driver's part here is
to ask: every ``every_s`` of its ticks it submits one step as a Ray task (never two at once) and
looks at the last one's ref without waiting; the rewrite runs in a Ray worker. A folder
warehouse is read on the driver's node only, so the task is pinned there. A step that fails
leaves the run as it was (``warehouse.compact_landed``): it is said on ``say`` and the next
is tried at its time. ``drain`` waits for the step in flight when the trials are done, so that
the run's own compaction does not find it running.

On object storage a step runs on any node, under the run's ``.landed`` lease
(``pipeline.sweep.compaction``), with the credentials its own node's environment names, as the
end compaction does (pipeline.sweep.end_compaction: none is ever sent to a task); on a node
with none the step says so, and no more are submitted (``agentsweep warehouse compact --landed``
runs one by hand). A step that finds the lease held (one run by hand) does nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from warehouse.location import Root, adopt_store_settings, store_settings

LANDED_EVERY_S = 300.0
"""Wall seconds between two steps of a running sweep: each rewrites what landed since."""


NO_CREDENTIALS = -1
"""A step's answer on a node whose environment names no object-storage credentials."""
DRAIN_S = 120.0
"""Longest the end of a sweep waits for the step in flight."""


def _step(root: str, run_id: str, store_env: Mapping[str, str]) -> int:
    """One step (in a Ray worker); the part files it replaced, or ``NO_CREDENTIALS``."""
    from pipeline.execution.lease import LeaseHeld
    from pipeline.execution.parts import store_credentials_named
    from pipeline.sweep.compaction import compact_landed_run
    from warehouse.location import S3Location, parse_location

    location = parse_location(root)
    if isinstance(location, S3Location):
        if not store_credentials_named():
            return NO_CREDENTIALS
        adopt_store_settings(store_env)  # endpoint and region, never a credential
    try:
        return sum(t.files_before for t in compact_landed_run(location, run_id))
    except LeaseHeld:  # a step run by hand holds the run's .landed lease
        return 0


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
        self.enabled = True
        """False once a step found no credentials on its node (object storage)."""

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

    def drain(self, timeout_s: float = DRAIN_S) -> None:
        """Wait for the step in flight (the trials are done): the run's compaction comes
        next and takes what a step holds."""
        if self.running is None:
            return
        done, _ = self.ray.wait([self.running], timeout=timeout_s)
        if done:
            self._finished(self.running)
        self.running = None

    def _finished(self, ref: Any) -> None:
        try:
            replaced = self.ray.get(ref)
        except self.ray.exceptions.RayError as exc:  # the run is as it was; the next step tries
            self.say(f"compacting what landed in run {self.run_id} failed: "
                     f"{str(exc).strip().splitlines()[-1]}")
            return
        if replaced == NO_CREDENTIALS:
            self.enabled = False
            self.say(f"what landed in run {self.run_id} is not compacted while it runs: the "
                     "Ray node of the step has no object-storage credentials in its "
                     "environment (agentsweep warehouse compact --landed --run-id "
                     f"{self.run_id} runs a step by hand)")

    def _submit(self) -> Any:
        folder = isinstance(self.root, Path)
        env = {} if folder else store_settings()
        options = step_options(self.node_id if folder else None)
        return self.ray.remote(_step).options(**options).remote(str(self.root), self.run_id, env)


def step_options(node_id: str | None) -> dict[str, Any]:
    """The Ray options of a compaction step: no CPU reserved (it must not wait behind the
    trials), never retried by Ray (a failed step leaves the run as it was), and pinned to
    ``node_id`` when given (the node whose disk holds a folder warehouse)."""
    options: dict[str, Any] = {"num_cpus": 0, "max_retries": 0}
    if node_id is not None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node_id, soft=False)
    return options
