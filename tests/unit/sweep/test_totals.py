"""The last line of every run: passed, failed, agent errors and incomplete trials, and the exit
code; the counts agree with ``agentsweep runs`` and the run's exit code."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from helpers.table_fixtures import BASE, write_runs
from rich.console import Console

from pipeline.cli.run import Terminal, report
from pipeline.sweep.config import SweepConfig
from pipeline.sweep.stages import SweepOutcome, summarize
from pipeline.sweep.totals import RunTotals, run_totals
from warehouse.query import run_named


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("totals") / "warehouse"
    write_runs(root)
    return root


def test_the_totals_are_the_runs_list_counts(root: Path) -> None:
    totals = run_totals(*summarize(root, BASE))
    listed = run_named(root, "runs_list")
    row = dict(zip(listed.columns, next(r for r in listed.rows if r[0] == BASE), strict=True))
    assert totals == RunTotals(row["passed"], row["failed"], row["agent_errors"],
                               row["incomplete"])
    assert totals == RunTotals(6, 6, 1, 0)
    assert totals.line(BASE, 0) == (f"run {BASE}: 6 passed, 6 failed, 1 agent errors, "
                                    "0 incomplete (of 13 trials); exit 0")


def test_no_summary_rows_count_nothing() -> None:
    assert run_totals(["k", "n", "agent_errors", "incomplete"], []) == RunTotals(0, 0, 0, 0)


@pytest.mark.parametrize(("statuses", "code"), [({"complete": 12, "agent_error": 1}, 0),
                                                ({"complete": 11, "incomplete": 2}, 3)])
def test_the_last_line_says_the_exit_code_the_run_returns(root: Path, statuses: dict[str, int],
                                                          code: int) -> None:
    columns, rows = summarize(root, BASE)
    outcome = SweepOutcome(BASE, 13, 13, 0, statuses, columns, rows)
    out, err = io.StringIO(), io.StringIO()
    terminal = Terminal(Console(file=out, width=200), Console(file=err, width=200))
    ending = report(SweepConfig(warehouse=root, run_id=BASE), outcome, terminal)
    assert ending.code == code
    assert ending.last_line == (f"run {BASE}: 6 passed, 6 failed, 1 agent errors, 0 incomplete "
                                f"(of 13 trials); exit {code}")
    assert "grid 13 trials: executed 13, skipped 0 (already final)" in out.getvalue()
    assert "complete=" not in out.getvalue()
