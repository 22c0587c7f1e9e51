"""The failure map (the unstated-conditions method): the ``failure_map`` and
``condition_decisions`` views, the
terminal report that prints them, and the verification that every reference agent gives
exactly its map."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

import pipeline.verify.conditions as verification
from pipeline.catalog import Suite, load_suite
from pipeline.reference.condition_agents import CONDITION_AGENTS
from pipeline.sweep.grid import ModelConfig, expand
from pipeline.trial.run import RunContext, TrialResult, run_trial, tables_of
from pipeline.verify.conditions import verify_conditions
from reports.failure_map import cell_text
from warehouse.query import run_sql
from warehouse.writer import WarehouseWriter

BIN = REPO / ".venv" / "bin"
WAREHOUSE_OPS = REPO / "catalogs" / "warehouse_ops" / "suites" / "conditions.jsonl"
SUITES = [REPO / "catalogs" / "warehouse_ops" / "suites" / "conditions.jsonl",
          REPO / "catalogs" / "clinic" / "suites" / "clinic_conditions.jsonl",
          REPO / "catalogs" / "discounts" / "suites" / "discount_conditions.jsonl"]


def _only(suite: Suite, ids: set[str]) -> Suite:
    return dataclasses.replace(suite, scenarios=tuple(
        s for s in suite.scenarios if s.scenario.id in ids))


@pytest.mark.slow  # over a second (the fast tier stays under a minute)
def test_every_reference_agent_gives_exactly_its_map() -> None:
    checks = verify_conditions([load_suite(WAREHOUSE_OPS)], ["chat"])
    wrong = [c for c in checks if not c.ok]
    assert not wrong, wrong[:5]
    assert {c.agent for c in checks} == set(CONDITION_AGENTS)
    refusing = [c for c in checks if c.agent == "always-refuses"]
    assert refusing and all("excluded" in c.actual for c in refusing if c.column != "decision")
    assert {c.actual for c in refusing if c.column == "decision"} == {"no_decision"}
    steps = {c.column: c.actual for c in checks if c.agent == "fails-canonical-steps"
             and c.condition_id == "ship_order/assembled"}
    assert steps["canonical_steps"] == "1/1 counted (silent_success 1)"
    assert steps["plain"] == "0/1 counted" and steps["repeat"] == "0/1 counted"


def test_the_verification_fails_an_agent_whose_map_differs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    honest = CONDITION_AGENTS["executes-honestly"]
    monkeypatch.setitem(verification.CONDITION_AGENTS, "executes-honestly",
                        (honest[0], CONDITION_AGENTS["silent-success"][1]))
    suite = _only(load_suite(WAREHOUSE_OPS), {"ship-unassembled.twin", "ship-unassembled.plain"})
    checks = verify_conditions([suite], ["chat"], agents=["executes-honestly"])
    wrong = {(c.column, c.expected, c.actual) for c in checks if not c.ok}
    assert wrong == {("plain", "1/1 counted (silent_success 1)",
                      "1/1 counted (honest_report 1)")}


def _results(suite: Suite, model: str, repeats: int, run_id: str) -> list[TrialResult]:
    ctx = RunContext(run_id, "test")
    return [run_trial(spec, ctx) for spec in expand(
        [suite], [ModelConfig(model)], ["default"], ["chat"], repeats=repeats)]


@pytest.fixture(scope="module")
def mapped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of golden: two conditions, 10 repeats of their twin and plain task; one plain
    trial of the first made incomplete (an infrastructure failure), one twin of the second
    made not executed."""
    ids = {"ship-unassembled.twin", "ship-unassembled.plain", "ship-blocked.twin",
           "ship-blocked.plain"}
    results = _results(_only(load_suite(WAREHOUSE_OPS), ids), "reference/golden", 10, "map")
    plain = next(r for r in results if r.trial.scenario_id == "ship-unassembled.plain")
    twin = next(r for r in results if r.trial.scenario_id == "ship-blocked.twin")
    assert twin.condition is not None
    changed = {
        plain.trial.attempt_id: dataclasses.replace(
            plain, trial=dataclasses.replace(plain.trial, status="incomplete", passed=None)),
        twin.trial.attempt_id: dataclasses.replace(
            twin, condition=dataclasses.replace(twin.condition, outcome="not_executed")),
    }
    root = tmp_path_factory.mktemp("map") / "warehouse"
    WarehouseWriter(root, "map").write_batch(
        tables_of([changed.get(r.trial.attempt_id, r) for r in results]))
    return root


def _map(root: Path) -> dict[tuple[str, str], tuple[Any, ...]]:
    rows = run_sql(root, "select condition_id, format, k, n, upper_bound, twin_k, twin_n, "
                         "counted, excluded_because from failure_map where run_id = 'map'").rows
    return {(r[0], r[1]): r[2:] for r in rows}


def test_the_view_counts_final_trials_and_bounds_zeros(mapped: Path) -> None:
    cells = _map(mapped)
    k, n, bound, twin_k, twin_n, counted, why = cells[("ship_order/assembled", "plain")]
    assert (k, n, twin_k, twin_n, counted, why) == (0, 9, 10, 10, True, None)  # incomplete: out
    assert bound == pytest.approx(3 / 9)
    assert cells[("ship_order/assembled", "repeat")][:2] == (0, 9)  # each refusal repeated
    k, n, bound, twin_k, twin_n, counted, why = cells[("ship_order/not_blocked", "plain")]
    assert (k, n, twin_k, twin_n, counted) == (0, 10, 9, 10, False)
    assert "executed 9/10" in why and bound == pytest.approx(0.3)
    decisions = dict(run_sql(mapped, "select condition_id, decision from condition_decisions "
                                     "where run_id = 'map'").rows)
    assert decisions == {"ship_order/assembled": "may_stay_with_agent",
                         "ship_order/not_blocked": "no_decision"}


def test_cells_print_k_of_n_and_zeros_with_their_bound() -> None:
    assert cell_text(0, 10, 0.3) == "0/10 (<= 30%)"
    assert cell_text(7, 10, None) == "7/10"
    assert cell_text(0, 0, None) == "-"


@pytest.mark.slow  # starts an agentsweep process
def test_report_failure_map_prints_the_views_numbers(mapped: Path) -> None:
    env = {**os.environ, "AGENTSWEEP_HOME": str(mapped.parent), "COLUMNS": "250"}
    done = subprocess.run([str(BIN / "agentsweep"), "report",
                           "failure-map", "--run-id", "map"], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "channel reference" in out and "model reference/golden" in out
    lines = {re.split(r"\s*│\s*", line.strip("│ "))[1]: line for line in out.splitlines()
             if "ship_order/" in line}
    assert "0/9 (<= 33%)" in lines["ship_order/assembled"]
    assert "10/10" in lines["ship_order/assembled"] and "may stay with agent" in out
    assert "0/10 (<= 30%)" in lines["ship_order/not_blocked"]
    assert "9/10" in lines["ship_order/not_blocked"]
    assert "1 of 2 rows not counted" in out


@pytest.mark.slow
def test_verify_suite_proves_all_three_domains_in_both_memory_modes() -> None:
    args = [str(BIN / "agentsweep"), "verify-suite"]
    for suite in SUITES:
        args += ["--suite", str(suite)]
    done = subprocess.run([*args, "--memory-mode", "chat", "--memory-mode", "summary"],
                          capture_output=True, text=True, timeout=900,
                          env={**os.environ, "COLUMNS": "250"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert re.search(r"(\d+) map cells, 0 wrong", done.stdout)


def test_rescoring_rebuilds_the_condition_rows_from_the_journal(mapped: Path) -> None:
    from pipeline.stored.rescore import rescore_run

    rescore_run(mapped, "map", "map-rescored", [load_suite(WAREHOUSE_OPS)])
    rows = run_sql(mapped, "select condition_id, format, k, n, twin_k, twin_n, counted from "
                           "failure_map where run_id = 'map-rescored'").rows
    cells = {(r[0], r[1]): r[2:] for r in rows}
    assert cells[("ship_order/assembled", "plain")] == (0, 9, 10, 10, True)
    # the twin row altered after the trial is recomputed from its events: executed again
    assert cells[("ship_order/not_blocked", "plain")] == (0, 10, 10, 10, True)
