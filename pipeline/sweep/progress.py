"""A progress bar for the sweep driver, on stderr: done / failed / retrying, rate and ETA.

Shown only when stderr is a terminal and ``AGENTSWEEP_PROGRESS`` is not ``0``; otherwise every
method is a no-op, so logs and CI output stay clean.
"""

from __future__ import annotations

import os
import sys
from types import TracebackType
from typing import Any

from pipeline.execution.attempts import Attempt

PROGRESS_SWITCH = "AGENTSWEEP_PROGRESS"


def progress_enabled() -> bool:
    return os.environ.get(PROGRESS_SWITCH, "1") != "0" and sys.stderr.isatty()


class SweepProgress:
    """Counts trials as their attempts settle. ``failed`` = final but not complete (agent
    error, limit, or incomplete after the last attempt); ``retrying`` = waiting for a retry."""

    def __init__(self, total: int, description: str = "trials",
                 enabled: bool | None = None) -> None:
        self.total = total
        self.done = 0
        self.failed = 0
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
                TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("failed {task.fields[failed]} · retrying {task.fields[retrying]}"),
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
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, failed=self.failed,
                             retrying=self.retrying)
