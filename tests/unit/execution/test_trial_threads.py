"""A trial worker's process lets its trial threads hold the interpreter lock longer than
CPython's default before a waiting thread asks for it (pipeline.execution.executor)."""

from __future__ import annotations

import sys

from pipeline.execution.executor import TRIAL_THREADS_SWITCH_INTERVAL_S, TrialWorker


def test_a_trial_worker_sets_its_process_switch_interval() -> None:
    default = sys.getswitchinterval()
    assert default != TRIAL_THREADS_SWITCH_INTERVAL_S
    try:
        TrialWorker("worker-0")
        assert sys.getswitchinterval() == TRIAL_THREADS_SWITCH_INTERVAL_S
    finally:
        sys.setswitchinterval(default)
