"""Design invariants a reviewer would otherwise check by hand: no import cycle in our packages
(function-local imports included, so none can hide one), typed rows that match the warehouse
schema column for column, and SQL that compares statuses and kinds only with members of their
closed sets."""

from __future__ import annotations

import ast
import re
from dataclasses import fields
from pathlib import Path
from typing import get_args

from helpers.sources import nodes

from pipeline.catalog.condition_models import MAP_COLUMNS, TaskRole
from pipeline.scoring.conditions import CONDITION_OUTCOMES, REPORT_KINDS
from pipeline.trace import EVENT_COLUMNS, EVENT_TYPES
from warehouse.rows import (
    AttemptRow,
    CheckRow,
    ComparisonRow,
    ConditionTrialRow,
    DiagnosticRow,
    JudgmentRow,
    RunRow,
    SnapshotRow,
    TrialRow,
)
from warehouse.schema import EVENT_KINDS, JUDGE_VERDICTS, TABLES, TRIAL_STATUSES

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("pipeline", "warehouse", "flows", "catalogs", "reports")


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Our modules that ``name`` imports anywhere in its file (top level, functions,
    TYPE_CHECKING blocks): an import is an edge wherever it is written."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in nodes(path):
        if isinstance(node, ast.Import):
            targets |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            targets |= {f"{base}.{a.name}" for a in node.names} | {base}
    out = set()
    for target in targets:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != name:
            out.add(target)
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while (top := stack.pop()) != node:
                component.append(top)
            if component:
                found.append(sorted([node, *component]))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_in_our_packages() -> None:
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert "pipeline.scoring.checks" in graph["pipeline.scoring"]  # the walk sees imports
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _columns(table: str) -> list[str]:
    return [c for c in TABLES[table].column_names if c != "schema_version"]


def test_typed_rows_have_exactly_their_tables_columns() -> None:
    rows = ((TrialRow, "trials"), (CheckRow, "checks"), (AttemptRow, "attempts"), (RunRow, "runs"),
            (ComparisonRow, "comparisons"), (ConditionTrialRow, "condition_trials"),
            (SnapshotRow, "snapshots"), (DiagnosticRow, "diagnostics"),
            (JudgmentRow, "judgments"))
    for row, table in rows:
        assert sorted(f.name for f in fields(row)) == sorted(_columns(table)), table


def test_the_event_union_covers_the_events_columns_and_each_kind_once() -> None:
    assert tuple(EVENT_TYPES) == EVENT_KINDS
    union = {f.name for cls in EVENT_TYPES.values() for f in fields(cls)}
    union = (union - {"rejected"}) | {"tool_error"}  # a memory update's reason, stored there
    assert union == set(EVENT_COLUMNS)
    key = {"run_id", "trial_id", "attempt_id"}
    assert set(EVENT_COLUMNS) | key == set(_columns("events"))
    for kind, cls in EVENT_TYPES.items():
        example = cls(turn=1, **({"tool_name": "t"} if "tool_name" in
                                 {f.name for f in fields(cls) if f.default is f.default_factory}
                                 else {}))
        assert example.kind == kind and set(example.row()) == set(EVENT_COLUMNS)


_COMPARED = re.compile(r"\b(status|outcome|kind|repeat_outcome|report|repeat_report|role|format"
                       r"|verdict|judge_verdict)\s*(?:=|<>|!=|IN)\s*\(?((?:'[^']*'\s*,?\s*)+)\)?",
                       re.IGNORECASE)
CONDITION_SQL = {"failure_map.sql", "condition_decisions.sql", "failure_map_run.sql",
                 "condition_decisions_run.sql", "html_condition_cells.sql"}
"""The SQL over ``condition_trials``, whose ``outcome`` is a condition task's (the
unstated-conditions method)."""


def test_sql_compares_statuses_and_kinds_only_with_members_of_their_closed_sets() -> None:
    trial_sets = {"status": set(TRIAL_STATUSES), "outcome": set(TRIAL_STATUSES),
                  "kind": set(EVENT_KINDS), "verdict": set(JUDGE_VERDICTS),
                  "judge_verdict": set(JUDGE_VERDICTS)}
    condition_sets = {
        "status": set(TRIAL_STATUSES), "outcome": set(CONDITION_OUTCOMES),
        "repeat_outcome": set(CONDITION_OUTCOMES), "report": set(REPORT_KINDS),
        "repeat_report": set(REPORT_KINDS), "role": set(get_args(TaskRole)),
        "format": set(MAP_COLUMNS),
    }
    seen = 0
    for path in sorted((REPO / "warehouse" / "sql").glob("*.sql")):
        allowed = condition_sets if path.name in CONDITION_SQL else trial_sets
        for match in _COMPARED.finditer(path.read_text("utf-8")):
            column = match.group(1).lower()
            for literal in re.findall(r"'([^']*)'", match.group(2)):
                seen += 1
                assert column in allowed, f"{path.name}: {column} compared outside its file"
                assert literal in allowed[column], f"{path.name}: {column} = {literal!r}"
    assert seen >= 20  # the SQL does compare statuses and outcomes: the pattern finds them
