"""A warm worker shared by several drivers (the shards of a run on one cluster, or two runs)
hands each driver only the attempts of its own plan when it polls: a driver that took another's
endings would drop them, and the other would wait for them forever."""

from __future__ import annotations

import time

from pipeline.execution.worker import Crashed, TrialWorker


def test_each_driver_polls_only_the_attempts_of_its_own_plan() -> None:
    worker = TrialWorker("shared", threads=2)
    worker._finish("plan-a", "t1:1", Crashed("a's"))
    worker._finish("plan-b", "t2:1", Crashed("b's"))
    worker._finish("plan-a", "t3:1", Crashed("a's"))
    assert [key for key, _ in worker.poll("plan-a", 0.01, linger_s=0)] == ["t1:1", "t3:1"]
    assert [key for key, _ in worker.poll("plan-b", 0.01, linger_s=0)] == ["t2:1"]
    started = time.monotonic()
    assert worker.poll("plan-a", 0.05, linger_s=0) == []  # nothing more: waits, then none
    assert time.monotonic() - started >= 0.04


def test_a_forgotten_plan_leaves_no_endings_behind() -> None:
    worker = TrialWorker("shared", threads=2)
    worker._finish("plan-a", "t1:1", Crashed("late"))
    worker.forget("plan-a")
    assert worker.poll("plan-a", 0.01, linger_s=0) == []
