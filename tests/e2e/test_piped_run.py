"""A run whose output is a log (``make run > log``, CI): plain progress lines in it, no control
codes, and the last line says how the trials ended and the exit code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import MEETING_SUITE
from helpers.commands import agentsweep


@pytest.mark.slow
def test_a_piped_run_logs_progress_lines_and_ends_with_its_totals(tmp_path: Path) -> None:
    run = agentsweep(tmp_path / "home", "run", "--suite", str(MEETING_SUITE), "--scenario", "V1",
                     "--scenario", "C2", "--memory-mode", "chat", "--repeats", "2", "--model",
                     "reference/golden", "--model", "reference/mutant-stale-value",
                     "--run-id", "piped", AGENTSWEEP_PROGRESS="1", COLUMNS="80")
    assert run.returncode == 0, run.stdout + run.stderr
    progress = [line for line in run.stdout.splitlines() if " trials done: " in line]
    assert progress and progress[-1].startswith("run piped: 8/8 trials done: 4 passed, 4 failed")
    assert progress[-1].endswith("finished")
    assert "\x1b" not in run.stdout + run.stderr and "\r" not in run.stdout + run.stderr
    assert run.stdout.splitlines()[-1] == ("run piped: 4 passed, 4 failed, 0 agent errors, "
                                           "0 incomplete (of 8 trials); exit 0")
    assert max(len(line) for line in run.stdout.splitlines()
               if not re.match(r"run piped: ", line)) <= 80
