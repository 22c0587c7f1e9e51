"""Trends across nights (warehouse/sql/trends.sql, reports.trends, `agentsweep report
regressions`): a synthetic 30-night series whose BREAKS cell fails from night 20 on."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from helpers.gate_fixtures import T0
from helpers.trend_fixtures import BREAK_NIGHT, PROMPT_AFTER, PROMPT_BEFORE, night_id, series
from typer.testing import CliRunner

from reports.trends import NOTHING_CHANGED, WindowError, load_trends, window_start
from warehouse.query import run_sql

EVER = datetime(2000, 1, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def prompt_series(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("prompt-change")
    series(home / "warehouse", "prompt")
    return home


@pytest.fixture(scope="module")
def silent_series(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("no-change")
    series(home / "warehouse", "none")
    return home


def test_a_prompt_change_on_night_20_is_attributed_to_the_prompt_hash(
        prompt_series: Path) -> None:
    trends = load_trends(prompt_series / "warehouse", EVER)
    [regression] = trends.regressions
    assert regression.cell.scenario_id == "BREAKS"
    assert regression.last_passing_run == night_id(BREAK_NIGHT - 1)
    assert regression.first_failing_run == night_id(BREAK_NIGHT)
    assert [(c.input, c.before, c.after) for c in regression.changes] == [
        ("prompt_sha256", PROMPT_BEFORE, PROMPT_AFTER)]
    assert regression.what_changed == "prompt_sha256"
    assert (regression.failing_passed, regression.failing_judged) == (0, 3)


def test_no_recorded_change_says_so(silent_series: Path) -> None:
    [regression] = load_trends(silent_series / "warehouse", EVER).regressions
    assert regression.changes == ()
    assert regression.what_changed == NOTHING_CHANGED


def test_flaky_cells_are_apart_from_regressions_with_their_counts(prompt_series: Path) -> None:
    trends = load_trends(prompt_series / "warehouse", EVER)
    [flaky] = trends.flaky
    assert flaky.cell.scenario_id == "FLAKY"
    assert (flaky.runs, flaky.passed, flaky.judged) == (30, 75, 90)  # 15 x 3 + 15 x 2


def test_the_views_agree_with_a_count_by_hand(prompt_series: Path) -> None:
    root = prompt_series / "warehouse"
    classes = run_sql(root, "SELECT scenario_id, cell_class FROM "
                      "cell_window(TIMESTAMPTZ '-infinity') ORDER BY 1", all_runs=True).rows
    assert classes == [("BREAKS", "regressed"), ("FLAKY", "flaky"), ("STEADY", "passing")]
    by_hand = run_sql(root, "SELECT count(*) FILTER (WHERE passed), count(*) FROM trials "
                      "WHERE scenario_id = 'BREAKS'", all_runs=True).rows[0]
    history = run_sql(root, "SELECT sum(passed), sum(judged) FROM cell_history "
                      "WHERE scenario_id = 'BREAKS'", all_runs=True).rows[0]
    assert history == by_hand == (57, 90)
    [(what,)] = run_sql(root, "SELECT what_changed FROM regression_attribution",
                        all_runs=True).rows
    assert what == "prompt_sha256"


def test_a_window_after_the_break_holds_no_regression(prompt_series: Path) -> None:
    """From night 21 on the cell only ever failed: nothing broke inside the window."""
    since = window_start("2026-05-22")  # T0 + 21 days
    assert since > T0
    trends = load_trends(prompt_series / "warehouse", since)
    assert trends.regressions == ()


def test_window_start() -> None:
    now = datetime(2026, 6, 1, tzinfo=UTC)
    assert window_start("30d", now) == datetime(2026, 5, 2, tzinfo=UTC)
    assert window_start("12h", now) == datetime(2026, 5, 31, 12, tzinfo=UTC)
    assert window_start("2026-05-01") == datetime(2026, 5, 1, tzinfo=UTC)
    with pytest.raises(WindowError):
        window_start("last month")


def _report(home: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> str:
    from pipeline.cli import app as cli

    monkeypatch.setenv("AGENTSWEEP_HOME", str(home))
    result = CliRunner().invoke(cli.app, ["report", "regressions", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_report_regressions_in_the_terminal(prompt_series: Path, silent_series: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    since = (datetime.now(UTC) - EVER).days
    text = _report(prompt_series, monkeypatch, "--since", f"{since}d")
    assert "prompt_sha256" in text and PROMPT_AFTER[:12] in text
    assert "FLAKY" in text and "75/90" in text
    rows = json.loads(_report(silent_series, monkeypatch, "--since", f"{since}d",
                              "--format", "json"))
    regressed = [r for r in rows if r["class"] == "regressed"]
    assert [r["what changed"] for r in regressed] == [NOTHING_CHANGED]
    assert "no regressed" in _report(silent_series, monkeypatch, "--since", "1d")


def test_a_cells_history_counts_each_trials_final_attempt_once(tmp_path: Path) -> None:
    """A trial that was incomplete, then passed on a resume: one passed trial in its cell's
    history, as in the trials view (one cell's history filters before choosing the row)."""
    from helpers.gate_fixtures import trial, write

    root = tmp_path / "warehouse"
    first = trial("r", "S", 0, None, status="incomplete")
    final = {**trial("r", "S", 0, True), "attempt_id": "r-second",
             "finished_at": T0.replace(hour=3)}
    write(root, "r", [first, final, trial("r", "S", 1, False)])
    key = {"suite_id": "gate_suite", "scenario_id": "S", "model": "m/a", "prompt_id": "default",
           "memory_mode": "chat", "since": EVER}
    from warehouse.query import run_named

    one = run_named(root, "cell_series", key, all_runs=True)
    row = dict(zip(one.columns, one.rows[0], strict=True))
    assert (row["trials"], row["judged"], row["passed"], row["incomplete"]) == (2, 2, 1, 0)
    every = run_sql(root, "SELECT trials, judged, passed FROM cell_history", all_runs=True).rows
    assert every == [(2, 2, 1)]


def test_a_table_of_many_cells_shows_limit_rows_and_says_how_many_more(
        prompt_series: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At a million trials `report regressions` printed 4,319 flaky cells; a table now shows
    --limit rows of each (csv and json give all)."""
    import dataclasses

    from pipeline.cli import trends as cli_trends

    real = load_trends(prompt_series / "warehouse", EVER)
    many = dataclasses.replace(real, flaky=real.flaky * 5)
    monkeypatch.setattr(cli_trends, "load_trends", lambda *_: many)
    since = f"{(datetime.now(UTC) - EVER).days}d"
    shown = _report(prompt_series, monkeypatch, "--since", since, "--limit", "2")
    assert "... 3 more flaky cells (--limit N, or --format csv for all)" in shown
    assert "more regressions" not in shown and "(5)" in shown
    rows = json.loads(_report(prompt_series, monkeypatch, "--since", since, "--limit", "2",
                              "--format", "json"))
    assert sum(r["class"] == "flaky" for r in rows) == 5
