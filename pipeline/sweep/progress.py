"""A sweep's progress: a bar on stderr (done / failed / retrying, rate and ETA) and, when the
sweep runs in a Prefect flow, log lines for ``prefect flow-run logs`` and the UI.

The bar is shown only when stderr is a terminal and ``AGENTSWEEP_PROGRESS`` is not ``0``. Log
lines go to ``log`` (the flow run's logger) every tenth of the trials or every
``LOG_EVERY_S`` seconds, whichever comes first, and once at the end.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

from pipeline.execution.attempts import Attempt

PROGRESS_SWITCH = "AGENTSWEEP_PROGRESS"
LOG_EVERY_S = 10.0


def progress_enabled() -> bool:
    return os.environ.get(PROGRESS_SWITCH, "1") != "0" and sys.stderr.isatty()


class SweepProgress:
    """Counts trials as their attempts settle. ``failed`` = final but not complete (agent
    error, limit, or incomplete after the last attempt); ``retrying`` = waiting for a retry."""

    def __init__(self, total: int, description: str = "trials",
                 enabled: bool | None = None, log: Callable[[str], None] | None = None) -> None:
        self.total = total
        self.done = 0
        self.failed = 0
        self.incomplete = 0
        self._log = log
        self._started = time.monotonic()
        self._logged_at = self._started
        self._next_logged = self._step()
        self._retrying: set[str] = set()
        self._enabled = progress_enabled() if enabled is None else enabled
        self._bar: Any = None
        self._task: Any = None
        self._description = description
        self._unlisten: Any = lambda: None

    @property
    def retrying(self) -> int:
        return len(self._retrying)

    def __enter__(self) -> SweepProgress:
        from pipeline.runtime import phases
        self._unlisten = phases.listen(self.phase)
        if self._enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                TextColumn("{task.description}", style="bold", markup=False), BarColumn(),
                MofNCompleteColumn(),
                TextColumn("failed {task.fields[failed]} · retrying {task.fields[retrying]}",
                           markup=False),
                TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                console=Console(stderr=True), transient=False, refresh_per_second=4)
            self._bar.__enter__()
            self._task = self._bar.add_task(self._description, total=self.total, failed=0,
                                            retrying=0)
        return self

    def phase(self, name: str) -> None:
        """Say what is starting, until trials run (then the description is the run's)."""
        if self._bar is not None:
            label = self._description if name == "trials" else f"{self._description}: {name}"
            self._bar.update(self._task, description=label)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._unlisten()
        if self._log is not None and exc is None:
            self._log(self.line())
        if self._bar is not None:
            self._bar.__exit__(exc_type, exc, tb)
            self._bar = None

    def attempt(self, attempt: Attempt) -> None:
        trial_id = attempt.result.trial.trial_id
        if not attempt.final:
            self._retrying.add(trial_id)
        else:
            self._retrying.discard(trial_id)
            self.done += 1
            self.failed += attempt.result.status != "complete"
            self.incomplete += attempt.result.status == "incomplete"
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, failed=self.failed,
                             retrying=self.retrying)
        self._maybe_log()

    def line(self) -> str:
        """Where the sweep stands, as one log line."""
        elapsed = time.monotonic() - self._started
        left = self.total - self.done
        eta = (f"ETA {elapsed / self.done * left:.0f} s" if self.done and left else
               "ETA unknown" if left else "finished")
        return (f"{self._description}: {self.done}/{self.total} trials done, {self.failed} "
                f"failed ({self.incomplete} incomplete), {self.retrying} retrying; "
                f"{elapsed:.0f} s elapsed, {eta}")

    def _step(self) -> int:
        return max(1, self.total // 10)

    def _maybe_log(self) -> None:
        if self._log is None or self.done >= self.total:
            return  # the last line is said on exit
        now = time.monotonic()
        if self.done >= self._next_logged or now - self._logged_at >= LOG_EVERY_S:
            self._log(self.line())
            self._logged_at = now
            self._next_logged = (self.done // self._step() + 1) * self._step()
