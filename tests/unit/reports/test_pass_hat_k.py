"""``agentsweep report pass_hat_k`` averages over the scenarios that have a final trial, as tau2
averages over the tasks left after its infrastructure errors, and says which it left out."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from helpers.commands import cli
from helpers.gate_fixtures import cell, trial, write

RUN = "infra"
LOST = [trial(RUN, "C", r, None, status="incomplete") for r in range(3)]
"""Scenario C of model m/a: its three trials all ended in infrastructure failures."""


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("pass-hat-k") / "home"
    write(home / "warehouse", RUN, [
        *cell(RUN, "A", [True, True, False]), *cell(RUN, "B", [True, False, False]), *LOST,
        trial(RUN, "A", 0, None, model="m/b", status="incomplete")])
    return home


def _report(home: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> str:
    monkeypatch.setenv("AGENTSWEEP_HOME", str(home))
    monkeypatch.setenv("COLUMNS", "200")
    code, out, err = cli("report", "pass_hat_k", "--run-id", RUN, *args)
    assert code == 0, out + err
    return out


def test_a_scenario_with_only_infrastructure_failures_is_left_out_and_named(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    records = json.loads(_report(home, monkeypatch, "--format", "json"))
    kept = [r for r in records if r["model"] == "m/a"]
    assert [(r["k"], r["scenarios"]) for r in kept] == [(1, 2), (2, 2), (3, 2)]
    assert [r["pass_hat_k"] for r in kept] == pytest.approx([(2 / 3 + 1 / 3) / 2, 1 / 6, 0.0],
                                                            abs=1e-6)  # A 2/3, B 1/3
    assert {(r["scenarios_left_out"], r["left_out_scenarios"]) for r in kept} == {(1, "C")}
    # a cell whose every scenario was lost still has its row: no pass^k, one scenario left out
    assert [r for r in records if r["model"] == "m/b"] == [{
        "model": "m/b", "prompt_id": "default", "memory_mode": "chat", "k": None,
        "scenarios": 0, "pass_hat_k": None, "scenarios_left_out": 1,
        "left_out_scenarios": "A"}]
    rows = list(csv.DictReader(io.StringIO(_report(home, monkeypatch, "--format", "csv"))))
    assert rows[0]["scenarios_left_out"] == "1" and rows[0]["left_out_scenarios"] == "C"


def test_the_table_shows_the_other_scenarios_pass_hat_k_and_a_note_of_the_left_out(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = _report(home, monkeypatch)
    assert "0.5" in out and "0.166667" in out
    assert "left_out_scenarios" not in out  # said once, under the table
    assert ("note: 1 scenario left out of pass^k, every trial incomplete (infrastructure "
            "failures): model m/a, prompt default, memory chat: C") in out
    assert "model m/b, prompt default, memory chat: A" in out
