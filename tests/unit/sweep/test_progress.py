"""A sweep's progress where no terminal reads it (a log file, a pipe, CI): one plain line every
``LOG_EVERY_S`` seconds or tenth of the trials and the same line at the end, no control codes;
and the bar on a terminal keeps its numbers at 80 columns."""

from __future__ import annotations

import io
import re
import time
from types import SimpleNamespace
from typing import Any

import pytest
from rich.console import Console

from pipeline.sweep import progress as progress_module
from pipeline.sweep.progress import LOG_EVERY_S, SweepProgress, bar_for, plain_stream


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _attempt(number: int, status: str, passed: bool | None, final: bool = True) -> Any:
    trial = SimpleNamespace(trial_id=f"t{number}", passed=passed, status=status)
    return SimpleNamespace(final=final, result=SimpleNamespace(trial=trial, status=status))


def test_plain_lines_every_n_seconds_and_every_tenth_of_the_trials() -> None:
    clock, stream = FakeClock(), io.StringIO()
    progress = SweepProgress(20, "run r1", enabled=False, stream=stream, clock=clock)
    outcomes = [("complete", True), ("complete", False), ("agent_error", False),
                ("incomplete", None)] * 5
    with progress:
        clock.now += LOG_EVERY_S - 1
        progress.tick()  # not yet 10 s: nothing
        clock.now += 1
        progress.tick()  # 10 s and no trial finished: a line all the same
        for number, (status, passed) in enumerate(outcomes):
            clock.now += 1
            if number == 5:
                progress.attempt(_attempt(number, "incomplete", None, final=False))  # a retry
            progress.attempt(_attempt(number, status, passed))
    lines = stream.getvalue().splitlines()
    assert lines[0] == ("run r1: 0/20 trials done: 0 passed, 0 failed, 0 agent errors, "
                        "0 incomplete; 0 retrying; 10 s elapsed, ETA unknown")
    assert lines[1] == ("run r1: 2/20 trials done: 1 passed, 1 failed, 0 agent errors, "
                        "0 incomplete; 0 retrying; 12 s elapsed, ETA 108 s")
    assert [re.search(r" (\d+)/20 ", line)[1] for line in lines] == [  # type: ignore[index]
        "0", "2", "4", "6", "8", "10", "12", "14", "16", "18", "20"]
    assert lines[-1] == ("run r1: 20/20 trials done: 5 passed, 5 failed, 5 agent errors, "
                         "5 incomplete; 0 retrying; 30 s elapsed, finished")
    assert "\x1b" not in stream.getvalue() and "\r" not in stream.getvalue()


def test_the_time_alone_says_a_line_while_trials_are_slow() -> None:
    clock, stream = FakeClock(), io.StringIO()
    with SweepProgress(100, "run slow", enabled=False, stream=stream, clock=clock) as progress:
        for number in range(3):
            clock.now += LOG_EVERY_S
            progress.attempt(_attempt(number, "complete", True))
    lines = stream.getvalue().splitlines()
    assert [line.split(": ")[1].split(" ")[0] for line in lines] == ["1/100", "2/100", "3/100",
                                                                      "3/100"]
    assert lines[-1].endswith("30 s elapsed, ETA 970 s")


def test_on_real_time_a_thread_says_lines_while_no_trial_finishes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress_module, "LOG_EVERY_S", 0.2)
    monkeypatch.setattr(progress_module, "TICK_S", 0.02)
    stream = io.StringIO()
    with SweepProgress(5, "run idle", enabled=False, stream=stream):
        deadline = time.monotonic() + 60  # a hang guard
        while stream.getvalue().count("\n") < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
    lines = stream.getvalue().splitlines()
    assert len(lines) >= 3 and all(" 0/5 trials done: " in line for line in lines)
    assert lines[0].endswith("ETA unknown")


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize(("stdout_tty", "stderr_tty", "expected"), [
    (False, True, "stdout"),   # make run > log: the log gets the lines, the terminal the bar
    (False, False, "stdout"),  # CI, a pipe: once, on stdout beside the tables
    (True, False, "stderr"),   # 2> err.log
    (True, True, None),        # a terminal: the bar only
])
def test_plain_lines_go_where_no_terminal_reads(stdout_tty: bool, stderr_tty: bool,
                                                expected: str | None,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    streams = {"stdout": _Stream(stdout_tty), "stderr": _Stream(stderr_tty)}
    monkeypatch.setattr(progress_module.sys, "stdout", streams["stdout"])
    monkeypatch.setattr(progress_module.sys, "stderr", streams["stderr"])
    monkeypatch.delenv("AGENTSWEEP_PROGRESS", raising=False)
    assert plain_stream() is (streams[expected] if expected else None)
    monkeypatch.setenv("AGENTSWEEP_PROGRESS", "0")
    assert plain_stream() is None


@pytest.mark.parametrize("width", [80, 200])
def test_the_bar_shows_its_numbers_whole(width: int) -> None:
    out = io.StringIO()
    console = Console(file=out, width=width, force_terminal=True, color_system=None)
    bar = bar_for(console)
    task = bar.add_task("run nightly-2026-05-01-with-a-long-run-id: trials", total=153,
                        not_passed=17, retrying=2)
    bar.update(task, completed=42)
    console.print(bar.make_tasks_table(bar.tasks))
    line = out.getvalue().rstrip("\n")
    assert "\n" not in line and len(line) <= width
    for shown in ("42/153", "not passed 17 · retrying 2", "ETA"):
        assert shown in line, line
    assert re.search(r"ETA -?:?[-\d:]+", line)
