"""Trial workers run at the niceness of the run that started them (Ray's default is 15: beside
any other work on the machine a sweep's trials would wait), unless the user sets
``RAY_worker_niceness``."""

from __future__ import annotations

import os
from typing import Any

import pytest

from pipeline.runtime import hygiene


def test_ray_workers_run_at_niceness_0(ray_local: Any) -> None:
    @ray_local.remote
    def niceness() -> int:
        return os.nice(0)

    assert os.nice(0) == 0  # the test process itself is not reniced
    assert ray_local.get(niceness.remote(), timeout=120) == 0


def test_a_users_worker_niceness_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAY_worker_niceness", "10")
    hygiene.apply()
    assert os.environ["RAY_worker_niceness"] == "10"
    monkeypatch.delenv("RAY_worker_niceness")
    hygiene.apply()
    assert os.environ["RAY_worker_niceness"] == "0"
