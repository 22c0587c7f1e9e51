"""A value handed to a flow run as a parameter (pipeline.sweep.handoff.Handed) reaches the flow
function itself, directly and through a subflow as ``run_sweep`` hands the plan inside the
nightly flow, while the flow runs Prefect stores hold its run id alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import MEETING_SUITE
from prefect import flow
from prefect.context import FlowRunContext

from pipeline.sweep.config import SweepConfig
from pipeline.sweep.handoff import Handed
from pipeline.sweep.stages import SweepPlan, plan

pytestmark = pytest.mark.slow  # a Prefect API

Seen = tuple[SweepPlan | None, dict[str, Any]]


@flow(name="handoff-probe", validate_parameters=False)
def _probe(config: SweepConfig, handed: Handed[SweepPlan] | None = None) -> Seen:
    """What the flow function got for ``config``, and the parameters its stored run holds."""
    context = FlowRunContext.get()
    assert context is not None and context.flow_run is not None
    return (handed.for_config(config) if handed else None), context.flow_run.parameters


@flow(name="handoff-probe-outer", validate_parameters=False)
def _outer(config: SweepConfig, handed: Handed[SweepPlan] | None = None) -> Seen:
    return _probe(config, handed)


def test_a_handed_plan_reaches_the_flow_and_its_stored_run_holds_the_run_id(
        prefect_harness: None, tmp_path: Path) -> None:
    config = SweepConfig(suites=[MEETING_SUITE], models=["reference/golden"], scenarios=["F1"],
                         memory_modes=["chat"], repeats=1, warehouse=tmp_path, run_id="handed")
    the_plan = plan(config)
    for run in (_probe, _outer):
        taken, stored = run(config, Handed.of(config, the_plan))
        assert taken is the_plan  # the very object, not a copy without it
        assert stored["handed"] == {"run_id": "handed"}
        assert "pending" not in str(stored)
    taken, _ = _probe(config.model_copy(update={"repeats": 2}), Handed.of(config, the_plan))
    assert taken is None  # prepared for another config: not taken
