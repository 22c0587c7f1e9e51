"""Whether the driver is connected to a Ray already (pipeline.sweep.stages.ray_connected), asked
while a local Ray starting early (pipeline.runtime.local_ray) may still be importing ``ray`` in
another thread."""

from __future__ import annotations

import types

import pytest

from pipeline.execution import executor
from pipeline.sweep.stages import ray_connected


def test_a_ray_module_still_half_imported_is_not_a_connection(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A module in sys.modules before its body has run: no is_initialized yet (a cold run's
    # early Ray thread mid-import crashed the run with "partially initialized module 'ray'").
    monkeypatch.setattr(executor, "_sessions_open", 0)  # another test's session in this worker
    assert ray_connected({"ray": types.ModuleType("ray")}) is False


def test_a_callers_own_ray_init_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    joined = types.ModuleType("ray")
    joined.is_initialized = lambda: True  # type: ignore[attr-defined]
    monkeypatch.setattr(executor, "_sessions_open", 0)
    assert ray_connected({"ray": joined}) is True
    assert ray_connected({}) is False  # no Ray imported at all
