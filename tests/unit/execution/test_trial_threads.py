"""A trial worker's process lets its trial threads hold the interpreter lock longer than
CPython's default before a waiting thread asks for it, from its first trial on (not while it
starts: pipeline.execution.worker)."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from pipeline.execution.worker import TRIAL_THREADS_SWITCH_INTERVAL_S, TrialWorker


def test_a_trial_worker_sets_its_process_switch_interval_at_its_first_trial(
        monkeypatch: pytest.MonkeyPatch) -> None:
    default = sys.getswitchinterval()
    assert default != TRIAL_THREADS_SWITCH_INTERVAL_S
    try:
        worker = TrialWorker("worker-0")
        assert sys.getswitchinterval() == default  # starting (importing LiteLLM) as before
        done: list[Any] = []
        monkeypatch.setattr(worker.holder, "unpack", lambda *args: (None, None))
        monkeypatch.setattr(worker, "_run", lambda *args: done.append(args) or "output")
        assert worker.run("plan", None, "key") == "output"  # type: ignore[arg-type]
        assert done and sys.getswitchinterval() == TRIAL_THREADS_SWITCH_INTERVAL_S
        assert worker.running_attempts() == 0
    finally:
        sys.setswitchinterval(default)
