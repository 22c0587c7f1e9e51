"""A sweep's progress: a bar on stderr when it is a terminal, plain lines where a person reads a
log, and log lines for ``prefect flow-run logs`` and the UI when the sweep runs in a flow.

- The bar (stderr a terminal): done/total, not passed, retrying, elapsed and ETA first, the
  bar and the description after them, so the numbers stay whole at 80 columns.
- Plain lines (stdout not a terminal, as in ``make run > log`` or CI; else stderr not a
  terminal): one line with no control codes every ``LOG_EVERY_S`` seconds, even while no trial
  finishes, or every tenth of the trials, whichever comes first, and the same line at the end.
- ``log`` (the flow run's logger) gets the same lines.

``AGENTSWEEP_PROGRESS=0`` turns the bar and the plain lines off (``log`` still gets its lines).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import TYPE_CHECKING, Any, TextIO

from pipeline.execution.attempts import Attempt
from pipeline.execution.outcome import Outcome

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

PROGRESS_SWITCH = "AGENTSWEEP_PROGRESS"
LOG_EVERY_S = 10.0
TICK_S = 1.0
"""How often the ticking thread looks whether a line is due (real time only)."""
NUMBERS_WIDTH = 56
"""Cells the bar's numbers take (done/total, not passed, retrying, elapsed, ETA), with room."""


def progress_enabled() -> bool:
    """The bar: stderr is a terminal and progress is not switched off."""
    return _switched_on() and sys.stderr.isatty()


def _switched_on() -> bool:
    return os.environ.get(PROGRESS_SWITCH, "1") != "0"


def plain_stream() -> TextIO | None:
    """Where plain progress lines go: stdout when it is not a terminal (a log file, a pipe),
    else stderr when it is not one; None when both are terminals or progress is off."""
    if not _switched_on():
        return None
    if not sys.stdout.isatty():
        return sys.stdout
    return None if sys.stderr.isatty() else sys.stderr


def bar_for(console: Console) -> Progress:
    """The progress bar on ``console``: its numbers first and whole, then a bar and the
    description in the room they leave (the description ends with ``…`` when it is short)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.table import Column

    bar_width = max(8, min(40, console.width - NUMBERS_WIDTH - 30))
    description_width = max(8, console.width - NUMBERS_WIDTH - bar_width - 2)
    return Progress(
        MofNCompleteColumn(),
        TextColumn("not passed {task.fields[not_passed]} · retrying {task.fields[retrying]}",
                   markup=False),
        TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
        BarColumn(bar_width=bar_width),
        TextColumn("{task.description}", style="bold", markup=False,
                   table_column=Column(no_wrap=True, overflow="ellipsis",
                                       max_width=description_width)),
        console=console, transient=False, refresh_per_second=4)


class SweepProgress:
    """Counts trials as their attempts settle, as the run's last line counts them: ``passed``,
    ``failed`` (complete, a check failed), ``agent_errors`` (agent error or limit),
    ``incomplete`` (after the last attempt); ``retrying`` = waiting for a retry.

    ``stream`` (default: ``plain_stream()``) gets the plain lines; ``tick`` says a line when
    ``LOG_EVERY_S`` passed without one. On real time (``clock`` None) a thread ticks every
    second while the sweep runs; with a ``clock`` given (monotonic seconds: a test's), the
    caller ticks."""

    def __init__(self, total: int, description: str = "trials",
                 enabled: bool | None = None, log: Callable[[str], None] | None = None,
                 stream: TextIO | None = None,
                 clock: Callable[[], float] | None = None) -> None:
        self.total = total
        self.done = 0
        self.passed = 0
        self.failed = 0
        self.agent_errors = 0
        self.incomplete = 0
        self._ticking_thread = clock is None
        self._clock = clock or time.monotonic
        self._started = self._clock()
        self._said_at = self._started
        self._next_said = self._step()
        self._retrying: set[str] = set()
        self._enabled = progress_enabled() if enabled is None else enabled
        self._sinks = [say for say in (log, self._plain_writer(enabled, stream)) if say]
        self._bar: Any = None
        self._task: Any = None
        self._description = description
        self._unlisten: Any = lambda: None
        self._stop = threading.Event()
        self._lock = threading.Lock()

    @staticmethod
    def _plain_writer(enabled: bool | None, stream: TextIO | None
                      ) -> Callable[[str], None] | None:
        target = stream if stream is not None else (None if enabled is False else plain_stream())
        if target is None:
            return None

        def write(text: str) -> None:
            target.write(text + "\n")
            target.flush()
        return write

    @property
    def retrying(self) -> int:
        return len(self._retrying)

    @property
    def not_passed(self) -> int:
        return self.done - self.passed

    def __enter__(self) -> SweepProgress:
        from pipeline.runtime import phases
        self._unlisten = phases.listen(self.phase)
        if self._enabled:
            from rich.console import Console

            self._bar = bar_for(Console(stderr=True))
            self._bar.__enter__()
            self._task = self._bar.add_task(self._description, total=self.total,
                                            not_passed=0, retrying=0)
        if self._sinks and self._ticking_thread:
            threading.Thread(target=self._ticking, name="sweep-progress", daemon=True).start()
        return self

    def phase(self, name: str) -> None:
        """Say what is starting, until trials run (then the description is the run's)."""
        if self._bar is not None:
            label = self._description if name == "trials" else f"{self._description}: {name}"
            self._bar.update(self._task, description=label)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        self._unlisten()
        if exc is None:
            self._say()
        if self._bar is not None:
            self._bar.__exit__(exc_type, exc, tb)
            self._bar = None

    def attempt(self, attempt: Attempt) -> None:
        """An attempt the driver settled (retried, or final with its rows)."""
        trial = attempt.result.trial
        if not attempt.final:
            self._retrying.add(trial.trial_id)
        else:
            self._count(trial.trial_id, trial.status, trial.passed)
        self._show()

    def committed(self, outcomes: Iterable[Outcome]) -> None:
        """Final attempts a worker wrote, now committed."""
        for outcome in outcomes:
            self._count(outcome.trial_id, outcome.status, outcome.passed)
        self._show()

    def _show(self) -> None:
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, not_passed=self.not_passed,
                             retrying=self.retrying)
        self._maybe_say()

    def _count(self, trial_id: str, status: str, passed: bool | None) -> None:
        self._retrying.discard(trial_id)
        self.done += 1
        self.passed += bool(passed)
        self.failed += status == "complete" and not passed
        self.agent_errors += status in ("agent_error", "limit")
        self.incomplete += status == "incomplete"

    def line(self) -> str:
        """Where the sweep stands, as one line with no control codes."""
        elapsed = self._clock() - self._started
        left = self.total - self.done
        eta = (f"ETA {elapsed / self.done * left:.0f} s" if self.done and left else
               "ETA unknown" if left else "finished")
        return (f"{self._description}: {self.done}/{self.total} trials done: {self.passed} "
                f"passed, {self.failed} failed, {self.agent_errors} agent errors, "
                f"{self.incomplete} incomplete; {self.retrying} retrying; {elapsed:.0f} s "
                f"elapsed, {eta}")

    def tick(self) -> None:
        """A line when ``LOG_EVERY_S`` passed since the last one (trials finishing or not)."""
        if self.done < self.total and self._clock() - self._said_at >= LOG_EVERY_S:
            self._say()

    def _ticking(self) -> None:
        while not self._stop.wait(TICK_S):
            self.tick()

    def _say(self) -> None:
        with self._lock:
            text = self.line()
            for say in self._sinks:
                say(text)
            self._said_at = self._clock()
            self._next_said = (self.done // self._step() + 1) * self._step()

    def _step(self) -> int:
        return max(1, self.total // 10)

    def _maybe_say(self) -> None:
        if not self._sinks or self.done >= self.total:
            return  # the last line is said on exit
        if self.done >= self._next_said or self._clock() - self._said_at >= LOG_EVERY_S:
            self._say()
