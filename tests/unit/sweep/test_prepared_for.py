"""A flow program prepares its sweep before the flow starts and the flow takes that preparation
(pipeline.sweep.prepare.prepared_for): once, and only for the same config. A process that runs
flows again (a deployment's worker) once handed a later flow the sweep prepared for an earlier
one with the same run id: its home and warehouse, so a model-swap on object storage after one
on a folder was refused as 'this run already exists' in the folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import MEETING_SUITE

from pipeline.sweep.config import SweepConfig
from pipeline.sweep.prepare import planned, prepared_for


def _config(warehouse: Path, repeats: int = 1) -> SweepConfig:
    return SweepConfig(suites=[MEETING_SUITE], models=["reference/golden"], scenarios=["F1"],
                       memory_modes=["chat"], repeats=repeats, warehouse=warehouse,
                       run_id="same-id")


def test_the_flow_takes_its_programs_preparation_once_and_never_another_configs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTSWEEP_HOME", str(tmp_path / "home"))
    first = _config(tmp_path / "one")
    by_program = prepared_for(first)
    assert prepared_for(first) is by_program  # the flow takes the program's
    assert prepared_for(first) is not by_program  # the next flow run prepares again
    other = _config(tmp_path / "two", repeats=2)  # same run id, another warehouse and grid
    prepared = prepared_for(other)
    assert prepared.config.warehouse == tmp_path / "two"
    assert planned(prepared.config).grid_size == 2
    assert planned(first).grid_size == 1  # a plan is never another config's
