"""`agentsweep export tau2` writes an incomplete trial (an infrastructure failure, whatever its
error kind) as tau2's ``infrastructure_error``, which tau2 leaves out of its metrics as we leave
it out of ours, and says on stderr how many trials were incomplete."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import get_args

import pytest
from conftest import REPO, loaded_suite
from helpers.commands import cli

from pipeline.errors import CONFIG_ERROR, InfraErrorKind
from pipeline.interop.tau2_export import termination_reason
from pipeline.sweep.grid import ModelConfig, expand
from pipeline.trial.run import RunContext, run_trial, tables_of
from warehouse.writer import WarehouseWriter

SUITE = REPO / "catalogs" / "tau2_retail" / "suites" / "retail.jsonl"
RUN = "tau2-infra"
LOST = {("0", 1): "timeout", ("105", 0): "simulator_error"}
"""The trials (task, repeat) that end incomplete, and how."""


def test_every_incomplete_trial_is_taus_infrastructure_error_whatever_its_kind() -> None:
    kinds = [*get_args(InfraErrorKind), CONFIG_ERROR]
    assert {kind: termination_reason({"status": "incomplete", "error_kind": kind})
            for kind in kinds} == dict.fromkeys(kinds, "infrastructure_error")
    assert [termination_reason({"status": s, "error_kind": k}) for s, k in [
        ("complete", None), ("limit", "context_limit"), ("limit", "step_limit"),
        ("agent_error", "tool_loop")]] == [
        "user_stop", "context_window_exceeded", "max_steps", "agent_error"]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Golden on tasks 0 and 105, two repeats; one repeat of each lost to the infrastructure."""
    home = tmp_path_factory.mktemp("tau2-infra") / "home"
    results = []
    for spec in expand([loaded_suite(SUITE)], [ModelConfig("reference/golden")], ["default"],
                       ["chat"], repeats=2):
        if spec.scenario.id not in ("0", "105"):
            continue
        result = run_trial(spec, RunContext(RUN, "test"))
        kind = LOST.get((spec.scenario.id, spec.repeat))
        if kind is not None:
            result = replace(result, trial=replace(result.trial, status="incomplete",
                                                   error_kind=kind, passed=None))
        results.append(result)
    WarehouseWriter(home / "warehouse", RUN).write_batch(tables_of(results))
    return home


def test_the_export_writes_infrastructure_errors_and_counts_them_on_stderr(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTSWEEP_HOME", str(home))
    out = tmp_path / "run.tau2.json"
    code, stdout, stderr = cli("export", "tau2", "--run-id", RUN, "--out", str(out))
    assert code == 0, stdout + stderr
    exported = json.loads(out.read_text("utf-8"))
    reasons = {(s["task_id"], s["trial"]): s["termination_reason"]
               for s in exported["simulations"]}
    assert reasons == {("0", 0): "user_stop", ("0", 1): "infrastructure_error",
                       ("105", 0): "infrastructure_error", ("105", 1): "user_stop"}
    assert exported["source"]["incomplete_trials"] == {"simulator_error": 1, "timeout": 1}
    assert " ".join(stderr.split()) == (
        "warning: 2 of 4 trials incomplete (simulator_error 1, timeout 1): exported as tau2's "
        "infrastructure_error, which tau2 leaves out of its metrics; `agentsweep run --run-id "
        f"{RUN} --resume` runs them again")
