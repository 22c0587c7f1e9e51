"""The model-swap study (flows/model_swap.py): one grid under model A and model B, paired on
everything but the model; end to end, the flow runs both sweeps, decides and stores the record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import MEETING_SUITE

from flows.model_swap import SwapSpecError, split_models, swap_configs
from pipeline.catalog import load_suites
from pipeline.sweep.config import SweepConfig
from pipeline.sweep.grid import expand
from warehouse.query import run_sql


def _identity(config: SweepConfig) -> list[tuple[Any, ...]]:
    return [(t.suite_id, t.scenario.id, t.scenario_sha256, t.prompt.sha256, t.memory_mode,
             t.repeat) for t in expand(load_suites(config.suites), config.resolved_models(),
                                       config.prompts, config.memory_modes, config.repeats)]


def test_the_two_grids_differ_only_in_the_model(tmp_path: Path) -> None:
    config = SweepConfig(suites=[MEETING_SUITE], models=["reference/golden",
                                                         "reference/mutant-ignores-switch"],
                         memory_modes=["chat"], repeats=2, warehouse=tmp_path)
    a, b = split_models(config, "swap-1")
    assert (a.run_id, b.run_id) == ("swap-1-a", "swap-1-b")
    assert a.model_names() == ["reference/golden"]
    assert b.model_names() == ["reference/mutant-ignores-switch"]
    assert _identity(a) == _identity(b) and _identity(a)
    with pytest.raises(SwapSpecError, match="exactly two models"):
        split_models(config.model_copy(update={"models": config.models[:1]}), "x")
    with pytest.raises(SwapSpecError, match=r"^--run-id: run id 'a b-a': use letters"):
        split_models(config, "a b")  # the study's runs are named, and checked, here


def test_each_invocation_is_its_own_study_unless_named(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The spec's run_id names the studies (a prefix); --run-id names one exactly; --resume
    needs it."""
    monkeypatch.setenv("AGENTSWEEP_HOME", str(tmp_path / "home"))
    spec = tmp_path / "swap.yaml"
    spec.write_text(f"run_id: nightly-swap\nsuites: [{MEETING_SUITE}]\nmodels:\n"
                    "  - name: reference/golden\n  - name: reference/mutant-stale-value\n", "utf-8")
    first, second = (swap_configs(str(spec))[0].run_id for _ in range(2))
    assert first != second
    assert first.startswith("nightly-swap-") and first.endswith("-a")
    a, b = swap_configs(str(spec), "mine", resume=True)
    assert (a.run_id, b.run_id, a.resume, b.resume) == ("mine-a", "mine-b", True, True)
    with pytest.raises(SwapSpecError, match="--run-id"):
        swap_configs(str(spec), resume=True)


@pytest.mark.slow
@pytest.mark.parametrize("warehouse", ["folder", "bucket"])
def test_the_flow_runs_both_models_and_stores_the_decision(
        ray_local: Any, prefect_harness: None, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest, warehouse: str) -> None:
    from flows.model_swap import model_swap

    home = tmp_path / "home"
    monkeypatch.setenv("AGENTSWEEP_HOME", str(home))
    root: Any = home / "warehouse"
    if warehouse == "bucket":  # the loopback S3 server: AGENTSWEEP_WAREHOUSE=s3://...
        root = request.getfixturevalue("s3_warehouse")
        monkeypatch.setenv("AGENTSWEEP_WAREHOUSE", str(root))
    spec = tmp_path / "swap.yaml"
    spec.write_text(f"run_id: swap-t\nsuites: [{MEETING_SUITE}]\nscenarios: [F1, V1]\n"
                    "memory_modes: [chat]\nrepeats: 1\nmodels:\n  - name: reference/golden\n"
                    "  - name: reference/mutant-ignores-switch\n", "utf-8")
    gate = tmp_path / "gate.yaml"
    gate.write_text("overall_pass_rate: 0.9\ncritical: [F1]\n", "utf-8")
    state = model_swap(str(spec), str(gate), run_id="swap-t", return_state=True)
    assert state.is_failed()  # a blocked swap is a Failed flow run, its verdict the message
    assert state.message.startswith("BLOCK: swap-t-b against swap-t-a: ")
    outcome = state.result(raise_on_failure=False)
    assert (outcome.baseline, outcome.candidate) == ("swap-t-a", "swap-t-b")
    assert outcome.exit_code == 1
    record = json.loads(outcome.published.record.read_text("utf-8"))
    assert record["gate"]["verdict"] == "block"
    assert record["gate"]["reasons"] == outcome.decision.gate.reasons
    assert "Gate: BLOCK (exit 1)" in outcome.published.html.read_text("utf-8")
    assert 'verdict" value="block"' in outcome.published.junit.read_text("utf-8")
    f1 = next(t for t in record["transitions"] if t["scenario_id"] == "F1")
    assert (f1["baseline_model"], f1["candidate_model"], f1["transition"], f1["critical"]) == (
        "reference/golden", "reference/mutant-ignores-switch", "new_failure", True)
    assert any("new critical regression: F1" in r for r in record["gate"]["reasons"])
    stored = run_sql(root, "SELECT scenario_id, transition FROM comparisons "
                     "WHERE run_id = $run_id ORDER BY 1", {"run_id": "swap-t-b"}).rows
    assert stored == [(t["scenario_id"], t["transition"]) for t in record["transitions"]]
