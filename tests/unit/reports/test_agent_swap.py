"""An agent swap is compared like a model swap: the built-in agent (one memory mode) against an
external agent (its own memory), cell by cell, the agent named beside the model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers.gate_fixtures import ALL, NONE, cell, write

from reports.decision import decide
from reports.paired import ComparisonInputError, pair_runs

AGENT = "/home/team/agents/my_agent.py:make"


def _external(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**r, "agent": AGENT, "memory_mode": "own",
             "trial_id": r["trial_id"] + "-ext"} for r in rows]


def test_a_builtin_run_and_an_agent_run_pair_cell_by_cell(tmp_path: Path) -> None:
    write(tmp_path, "base", [*cell("base", "KEEP", ALL), *cell("base", "BREAK", ALL)])
    write(tmp_path, "cand", _external([*cell("cand", "KEEP", ALL), *cell("cand", "BREAK", NONE)]))
    decision = decide(tmp_path, "base", "cand")
    by_scenario = {t.scenario_id: t for t in decision.transitions}
    assert {s: t.transition for s, t in by_scenario.items()} == {
        "KEEP": "unchanged", "BREAK": "new_failure"}
    swap = by_scenario["BREAK"]
    assert (swap.baseline_model, swap.candidate_model, swap.memory_mode) == (
        "m/a", "my_agent.py:make · m/a", "chat→own")
    assert [t.scenario_id for t in decision.regressions()] == ["BREAK"]


def test_an_agent_swap_over_several_builtin_memory_modes_is_refused_by_name(
        tmp_path: Path) -> None:
    write(tmp_path, "base", [*cell("base", "S", ALL), *cell("base", "S", ALL, memory="summary")])
    write(tmp_path, "cand", _external(cell("cand", "S", ALL)))
    with pytest.raises(ComparisonInputError, match="holds chat, summary"):
        pair_runs(tmp_path, "base", "cand")


def test_runs_of_the_same_external_agent_pair_as_before(tmp_path: Path) -> None:
    write(tmp_path, "base", _external(cell("base", "S", ALL)))
    write(tmp_path, "cand", _external(cell("cand", "S", NONE)))
    paired = pair_runs(tmp_path, "base", "cand")
    assert paired.by_model and paired.pairs.height == 3
    assert set(paired.pairs["memory_mode"].to_list()) == {"own"}


def test_the_html_reports_cells_and_trial_lists_name_an_external_agent(tmp_path: Path) -> None:
    from warehouse.query import run_named

    write(tmp_path, "run", [*cell("run", "S", ALL), *_external(cell("run", "S", NONE))])
    for query in ("html_cells", "html_cell_trials"):
        result = run_named(tmp_path, query, {"run_id": "run"})
        models = {row[result.columns.index("model")] for row in result.rows}
        assert models == {"m/a", "my_agent.py:make · m/a"}, query
