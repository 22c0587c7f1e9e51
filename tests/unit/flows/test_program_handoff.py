"""A flow program prepares before its flow starts and hands that preparation to the flow run: the
flow, recomputing its config from the same parameters, takes it (no second preparation, no
second plan) and would prepare only for another config."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import MEETING_SUITE

from pipeline.errors import ExitCode
from pipeline.sweep.handoff import Handed
from pipeline.sweep.prepare import PreparedSweep


class _FlowStub:
    """Stands for the flow: records what the program passes it, then stops the program as a
    Ctrl-C would (the flow itself is tested with Prefect and Ray in the slow tier)."""

    def __init__(self) -> None:
        self.args: tuple[Any, ...] = ()

    def with_options(self, **_: Any) -> _FlowStub:
        return self

    def __call__(self, *args: Any, **_: Any) -> None:
        self.args = args
        raise KeyboardInterrupt


def _spec(tmp_path: Path, models: str) -> Path:
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"suites: [{MEETING_SUITE}]\nscenarios: [F1]\nmemory_modes: [chat]\n"
                    f"repeats: 1\nmodels: [{models}]\n", "utf-8")
    return spec


def test_the_nightly_program_hands_its_preparation_to_the_flow(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import flows.nightly as nightly

    monkeypatch.setenv("AGENTSWEEP_HOME", str(tmp_path / "home"))
    stub = _FlowStub()
    monkeypatch.setattr(nightly, "nightly", stub)
    spec = _spec(tmp_path, "reference/golden")
    assert nightly.run_once(str(spec), None, None) == ExitCode.INTERRUPTED
    spec_path, _, run_id, _, _, handed = stub.args
    assert isinstance(handed, Handed)
    prepared = handed.for_config(nightly.nightly_config(spec_path, run_id))  # as the flow does
    assert isinstance(prepared, PreparedSweep) and prepared.plan.grid_size == 1


def test_the_model_swap_program_hands_both_preparations_to_the_flow(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import flows.model_swap as model_swap

    monkeypatch.setenv("AGENTSWEEP_HOME", str(tmp_path / "home"))
    stub = _FlowStub()
    monkeypatch.setattr(model_swap, "model_swap", stub)
    spec = _spec(tmp_path, "reference/golden, reference/mutant-ignores-switch")
    assert model_swap.run_once(str(spec), None, None, None) == ExitCode.INTERRUPTED
    spec_path, _, _, study, resume, handed = stub.args
    for config in model_swap.swap_configs(spec_path, study, resume):  # as the flow does
        found = [h.for_config(config) for h in handed if h.for_config(config) is not None]
        assert len(found) == 1 and found[0].config.run_id == config.run_id
