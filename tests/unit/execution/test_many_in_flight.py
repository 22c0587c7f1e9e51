"""Many trials in flight: the driver waits on a few references per worker, never one per
trial, and a coroutine trial body waits as a task on its worker's event loop, not in a thread
of its own (pipeline.execution.worker)."""

from __future__ import annotations

import asyncio
import sys
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
import ray.cloudpickle as cloudpickle
from conftest import MEETING_SUITE

from pipeline.execution.executor import ExecuteOptions, execute
from pipeline.sweep.config import SweepConfig
from pipeline.sweep.grid import TrialSpec
from pipeline.sweep.stages import plan
from pipeline.trial.run import RunContext, TrialResult, run_trial

CTX = RunContext(run_id="many", code_version="test")
IN_FLIGHT = 120


def _specs(root: Path, repeats: int) -> list[TrialSpec]:
    config = SweepConfig(suites=[MEETING_SUITE], memory_modes=["chat"], repeats=repeats,
                         run_id="many", warehouse=root)
    return plan(config).pending


@dataclass(frozen=True)
class Waiting:
    """A coroutine trial body: it waits until ``IN_FLIGHT`` bodies wait at once (or 5 s), then
    returns the template renamed, with the threads of its process in ``turns`` and the most
    bodies seen waiting together in ``model_calls``."""

    template: TrialResult
    state: dict[str, int] = field(default_factory=lambda: {"waiting": 0, "most": 0})
    """Shared by the bodies of one worker (the plan, and this with it, reaches it once)."""

    async def __call__(self, spec: TrialSpec, ctx: RunContext, node_id: str) -> TrialResult:
        state = self.state
        state["waiting"] += 1
        state["most"] = max(state["most"], state["waiting"])
        for _ in range(500):
            if state["most"] >= IN_FLIGHT:
                break
            await asyncio.sleep(0.01)
        state["waiting"] -= 1
        trial = replace(self.template.trial, trial_id=spec.trial_id, run_id=ctx.run_id,
                        turns=threading.active_count(), model_calls=state["most"])
        return replace(self.template, trial=trial)


def test_the_driver_waits_on_a_few_refs_per_worker_and_bodies_wait_as_tasks(
        ray_local: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    specs = _specs(tmp_path, repeats=-(-IN_FLIGHT // 11))[:IN_FLIGHT]
    template = run_trial(specs[0], CTX)
    waited: list[int] = []
    wait = ray_local.wait

    def counting(refs: list[Any], *args: Any, **kwargs: Any) -> Any:
        waited.append(len(refs))
        return wait(refs, *args, **kwargs)

    monkeypatch.setattr(ray_local, "wait", counting)
    results: list[TrialResult] = []
    execute(specs, CTX, results.append, IN_FLIGHT,
            options=ExecuteOptions(workers=1, trial_runner=Waiting(template)))
    assert sorted(r.trial.trial_id for r in results) == sorted(s.trial_id for s in specs)
    assert max(r.trial.model_calls for r in results) == IN_FLIGHT  # all waited at once
    assert max(r.trial.turns for r in results) < IN_FLIGHT / 2  # without a thread each
    assert waited and max(waited) <= 8  # polls, starts, flushes: never one ref per trial
