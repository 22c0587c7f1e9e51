"""The commands a terminal of 80 columns reads most: ``runs`` keeps one line per run."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.commands import cli
from helpers.table_fixtures import write_many_runs

from pipeline.cli import app
from pipeline.cli.tables import make_console


def _at_width(monkeypatch: pytest.MonkeyPatch, home: Path, width: int) -> None:
    monkeypatch.setenv("AGENTSWEEP_HOME", str(home))
    monkeypatch.setenv("COLUMNS", str(width))
    monkeypatch.setattr(app, "console", make_console())  # made at import, for another width


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
