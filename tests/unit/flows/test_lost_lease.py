"""A driver that lost its run's lease (an object-store outage longer than the lease) stops the
sweep as a full disk does: one line, exit 3, the resume command; never a traceback."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

import flows.sweep
from pipeline.execution.lease import LeaseLost
from pipeline.sweep.config import SweepConfig


def test_a_lost_lease_stops_the_sweep_with_what_to_do(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    def lost(*_: Any, **__: Any) -> Any:
        raise LeaseLost("run r1: another driver took over this run's lease")

    monkeypatch.setattr(flows.sweep, "execute_plan", lost)
    monkeypatch.setattr(flows.sweep, "get_run_logger", lambda: logging.getLogger("t"))
    statuses, stop = flows.sweep.execute_task.fn(SweepConfig(warehouse=tmp_path), None)
    assert statuses == {} and stop is not None
    assert "took over this run's lease" in stop.reason and "AGENTSWEEP_LEASE_SECONDS" in stop.remedy
