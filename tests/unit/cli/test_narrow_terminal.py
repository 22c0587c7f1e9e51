"""The commands a terminal of 80 columns reads most: ``runs`` keeps one line per run, and
``compare`` lists the cells that changed (``--all``: every cell)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.commands import cli
from helpers.gate_fixtures import ALL, cell, write
from helpers.table_fixtures import BASE, CAND, write_many_runs, write_runs

from pipeline.cli import terminal
from pipeline.cli.tables import make_console


def _at_width(monkeypatch: pytest.MonkeyPatch, home: Path, width: int) -> None:
    monkeypatch.setenv("AGENTSWEEP_HOME", str(home))
    monkeypatch.setenv("COLUMNS", str(width))
    monkeypatch.setattr(terminal, "console", make_console())  # made at import, another width


def test_twenty_runs_at_80_columns_are_a_line_each(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    run_ids = write_many_runs(tmp_path / "warehouse", 20)
    _at_width(monkeypatch, tmp_path, 80)
    code, out, err = cli("runs")
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) <= 25 and max(len(line) for line in lines) <= 80
    assert "not shown: " in lines[0] and "│" not in lines[0] and ":  " not in out
    for run_id in run_ids:  # whole, on its own row, with how its trials ended
        assert len([line for line in lines if f"│ {run_id} " in line]) == 1
    assert "┃ incomplete" in out and "┃ agent_errors" in out


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("compare-home")
    write_runs(home / "warehouse")
    return home


def test_compare_lists_the_changed_cells_and_counts_the_unchanged(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _at_width(monkeypatch, home, 80)
    code, out, err = cli("compare", BASE, CAND, "--resamples", "50")
    assert code == 0, err
    assert "F1-fixed-slot │" not in out and "unchanged │" not in out
    assert "1 unchanged cell(s) not shown (--all shows them)" in out
    assert "│ V1-switch-room" in out and "fixed" in out and "flaky" in out
    code, every, err = cli("compare", BASE, CAND, "--all", "--resamples", "50")
    assert code == 0, err
    assert "│ F1-fixed-slot" in every and "unchanged │" in every and "not shown (--all" not in every


def test_a_comparison_where_nothing_changed_says_so_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for run_id in ("same-a", "same-b"):
        write(tmp_path / "warehouse", run_id, cell(run_id, "S", ALL))
    _at_width(monkeypatch, tmp_path, 80)
    code, out, err = cli("compare", "same-a", "same-b", "--resamples", "50")
    assert code == 0, err
    assert ("same-b vs same-a: transitions (paired repeats): none changed; 1 unchanged cell(s) "
            "not shown (--all shows them)") in " ".join(out.split())
    assert "┃ scenario" not in out.split("usage per trial")[0]
