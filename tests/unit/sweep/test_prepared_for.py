"""A flow program prepares its sweep before the flow starts and hands that preparation to the flow
run as a parameter (pipeline.sweep.handoff.Handed): the flow takes it only for the config it was
prepared from and prepares itself when handed nothing (a deployment's run). A process that runs
flows again (a deployment's worker, tests) never gets a sweep prepared for another config, say
an earlier home or warehouse under the same run id. Prefect stores a flow's parameters: of a
handed value it stores the run id alone, never the plan or a key."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import MEETING_SUITE

from pipeline.models.config import ModelConfig
from pipeline.sweep.config import SweepConfig
from pipeline.sweep.handoff import Handed
from pipeline.sweep.prepare import prepare, prepared_for
from pipeline.sweep.stages import plan


def _config(warehouse: Path, repeats: int = 1) -> SweepConfig:
    return SweepConfig(suites=[MEETING_SUITE], models=["reference/golden"], scenarios=["F1"],
                       memory_modes=["chat"], repeats=repeats, warehouse=warehouse,
                       run_id="same-id")


def test_the_flow_takes_the_handed_preparation_only_for_its_own_config(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTSWEEP_HOME", str(tmp_path / "home"))
    first = _config(tmp_path / "one")
    by_program = prepare(first)
    handed = Handed.of(first, by_program)
    assert prepared_for(first, [handed]) is by_program  # the flow takes the program's
    other = _config(tmp_path / "two", repeats=2)  # same run id, another warehouse and grid
    prepared = prepared_for(other, [handed])
    assert prepared is not by_program
    assert prepared.config.warehouse == tmp_path / "two" and prepared.plan.grid_size == 2


def test_a_flow_run_handed_nothing_prepares_itself(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTSWEEP_HOME", str(tmp_path / "home"))
    config = _config(tmp_path / "wh", repeats=2)
    prepared = prepared_for(config)
    assert prepared.config.run_id == "same-id" and prepared.plan.grid_size == 2
    assert prepared_for(config) is not prepared  # each flow run its own


def test_the_sweep_flow_plans_for_its_config_unless_handed_that_configs_plan(
        tmp_path: Path) -> None:
    from flows.sweep import plan_task

    config = _config(tmp_path / "wh")
    handed_plan = plan(config)
    assert plan_task.fn(config, Handed.of(config, handed_plan)) is handed_plan
    other = _config(tmp_path / "wh", repeats=3)
    planned = plan_task.fn(other, Handed.of(config, handed_plan))
    assert planned is not handed_plan and planned.grid_size == 3
    assert plan_task.fn(config, None).grid_size == 1


def test_prefect_stores_the_run_id_of_a_handed_value_and_nothing_of_the_value(
        tmp_path: Path) -> None:
    from prefect.utilities.collections import visit_collection

    from flows.sweep import sweep_flow

    keyed = _config(tmp_path / "wh").model_copy(update={"models": [
        ModelConfig("reference/golden", api_base="http://user:sk-secret@127.0.0.1:9/v1")]})
    handed = Handed.of(keyed, plan(keyed))
    stored = sweep_flow.serialize_parameters({"handed": handed})
    assert stored == {"handed": {"run_id": "same-id"}}  # no key, no trial
    seen: list[object] = []
    visit_collection(handed, lambda value: seen.append(value), max_depth=-1)
    assert not any(isinstance(v, SweepConfig) for v in seen)  # nor walked for futures
