"""A warm worker shared by several drivers (the shards of a run on one cluster, or two runs)
hands each driver only the attempts of its own plan when it polls: a driver that took another's
endings would drop them, and the other would wait for them forever."""

from __future__ import annotations

import time

from pipeline.execution.worker import PLAN_SILENT_S, Crashed, TrialWorker


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


def test_a_plan_whose_driver_went_silent_is_let_go_and_a_live_one_kept() -> None:
    """A driver killed with SIGKILL never calls ``forget``: on a warm stack its unpolled
    endings and its part buffer would stay in the worker for good."""
    worker = TrialWorker("shared", threads=2)
    now = [0.0]
    worker.clock = lambda: now[0]
    worker.poll("dead", 0, linger_s=0)
    worker.poll("live", 0, linger_s=0)
    worker._finish("dead", "t1:1", Crashed("nobody polls"))
    worker._finish("live", "t2:1", Crashed("polled later"))
    now[0] = PLAN_SILENT_S - 1
    worker.poll("live", 0, linger_s=0)  # its driver is alive: it takes its ending
    worker._finish("live", "t3:1", Crashed("polled later"))
    now[0] = PLAN_SILENT_S + 1  # "dead" silent longer than allowed, "live" not
    worker.start("other", [])
    assert set(worker._done) == {"live"} and set(worker._heard) == {"live", "other"}
    worker._finish("dead", "t4:1", Crashed("an attempt that ended after"))
    now[0] = 2 * PLAN_SILENT_S + 2  # the late ending goes too; "live" has gone silent since
    worker.start("other", [])
    assert worker._done == {} and set(worker._heard) == {"other"}
