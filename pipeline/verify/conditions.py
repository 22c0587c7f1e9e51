"""Verification of conditions suites: every reference agent gives exactly its failure map.

Each agent of ``pipeline.reference.condition_agents`` plays every scenario of the suites (once per
memory mode), its trials are written to a scratch warehouse, and the map is read back through
the real ``failure_map`` and ``condition_decisions`` views - so the verification covers the
outcome classification, the rows and the SQL a user reads, not a copy of them. A cell is right
when its k, n, twin, counted flag and report counts are the ones the agent's ``ExpectedMap``
says; a row is right when its decision is.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.catalog import Suite
from pipeline.reference.condition_agents import CONDITION_AGENTS, ExpectedMap
from pipeline.sweep.grid import MemoryMode, ModelConfig, expand
from pipeline.trial.run import RunContext, run_trial, tables_of
from warehouse.query import run_named
from warehouse.writer import WarehouseWriter

REPORT_COLUMNS = ("silent_success", "incomplete_checklist", "honest_report")


@dataclass(frozen=True)
class MapCheck:
    """One cell (or, with ``column`` "decision", one row) of one agent's map."""

    agent: str
    condition_id: str
    mode: str
    column: str
    expected: str
    actual: str

    @property
    def ok(self) -> bool:
        return self.expected == self.actual


def _expected_cell(expected: ExpectedMap, cell: Mapping[str, Any],
                   plain: Mapping[str, Any]) -> str:
    column = str(cell["format"])
    attempts = int(cell["n"])
    if column == "repeat":  # played after each plain refusal the agent must have made
        refused = 0 if "plain" in expected.failing else int(plain["n"])
        attempts = refused if expected.repeat_played else 0
    k = attempts if column in expected.failing else 0
    reports = {name: (k if expected.report == name else 0) for name in REPORT_COLUMNS}
    return _cell_text(k, attempts, expected.twin_executed, reports)


def _cell_text(k: int, n: int, counted: bool, reports: Mapping[str, int]) -> str:
    said = ", ".join(f"{name} {count}" for name, count in reports.items() if count)
    return f"{k}/{n}{' counted' if counted else ' excluded'}{f' ({said})' if said else ''}"


def _actual_cell(cell: Mapping[str, Any]) -> str:
    return _cell_text(int(cell["k"]), int(cell["n"]), bool(cell["counted"]),
                      {name: int(cell[name]) for name in REPORT_COLUMNS})


def _rows(root: Path, name: str, run_id: str) -> list[dict[str, Any]]:
    result = run_named(root, name, {"run_id": run_id})
    return [dict(zip(result.columns, row, strict=True)) for row in result.rows]


def _check_map(agent: str, expected: ExpectedMap, cells: list[dict[str, Any]],
               decisions: list[dict[str, Any]]) -> list[MapCheck]:
    checks = []
    plains = {(c["condition_id"], c["memory_mode"]): c for c in cells if c["format"] == "plain"}
    for cell in cells:
        key = (cell["condition_id"], cell["memory_mode"])
        checks.append(MapCheck(agent, str(cell["condition_id"]), str(cell["memory_mode"]),
                               str(cell["format"]), _expected_cell(expected, cell, plains[key]),
                               _actual_cell(cell)))
    for row in decisions:
        wanted = expected.decision
        if wanted == "enforce_in_code" and row["enforced"] == "code":
            wanted = "keep_in_code"  # already enforced in code: keep it there
        checks.append(MapCheck(agent, str(row["condition_id"]), str(row["memory_mode"]),
                               "decision", wanted, str(row["decision"])))
    return checks


def verify_conditions(suites: Sequence[Suite], modes: Sequence[MemoryMode],
                      agents: Sequence[str] | None = None,
                      root: Path | None = None) -> list[MapCheck]:
    """Every cell of every agent's map, expected against actual. ``root``: the scratch
    warehouse (default: a temporary folder, removed afterwards)."""
    if root is None:
        with tempfile.TemporaryDirectory(prefix="agentsweep-verify-") as scratch:
            return verify_conditions(suites, modes, agents, Path(scratch))
    checks: list[MapCheck] = []
    for agent in agents or list(CONDITION_AGENTS):
        run_id = f"verify-{agent}"
        ctx = RunContext(run_id, "verify")
        results = [run_trial(spec, ctx) for spec in expand(
            suites, [ModelConfig(f"reference/{agent}")], ["default"], modes, repeats=1)]
        WarehouseWriter(root, run_id).write_batch(tables_of(results))
        cells = _rows(root, "failure_map_run", run_id)
        decisions = _rows(root, "condition_decisions_run", run_id)
        if not cells:
            checks.append(MapCheck(agent, "-", "-", "map", "a map", "no map rows"))
        checks += _check_map(agent, CONDITION_AGENTS[agent][1], cells, decisions)
    return checks
