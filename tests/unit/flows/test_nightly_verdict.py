"""The nightly's last line: its verdict, how the run's trials ended and the exit code; a named
baseline checked before the sweep."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.table_fixtures import BASE, write_runs

from flows.nightly import PREVIOUS, NightlyOutcome, check_baseline, verdict_lines
from pipeline.sweep.preflight import BadInput
from pipeline.sweep.stages import SweepOutcome, summarize


@pytest.mark.parametrize(("statuses", "expected"), [
    ({"complete": 12, "agent_error": 1}, ("PASS", 0)),
    ({"complete": 11, "incomplete": 2}, ("INCOMPLETE", 3)),
])
def test_the_last_line_counts_the_trials_and_says_the_exit_code(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], statuses: dict[str, int],
        expected: tuple[str, int]) -> None:
    root = tmp_path / "warehouse"
    write_runs(root)
    columns, rows = summarize(root, BASE)
    sweep = SweepOutcome(BASE, 13, 13, 0, statuses, columns, rows)
    code, lines = verdict_lines(NightlyOutcome(BASE, sweep, None))
    verdict, exit_code = expected
    assert code == exit_code
    last = lines[-1]
    assert last.startswith(f"{verdict}: nightly {BASE} no baseline to compare with")
    assert last.endswith(f"; trials: 6 passed, 6 failed, 1 agent errors, 0 incomplete "
                         f"(of 13 trials); exit {exit_code}")


def test_a_named_baseline_is_checked_as_it_enters_before_the_sweep() -> None:
    check_baseline(None)
    check_baseline(PREVIOUS)
    check_baseline("nightly-20260501-ab12cd")
    with pytest.raises(BadInput, match=r"^--baseline: run id 'a/b': use letters"):
        check_baseline("a/b")
