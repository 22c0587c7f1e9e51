"""Where a run stands, for the viewer's index: finished, running (its latest invocation has
not finished and a driver holds its run lock), or stopped (not finished and nobody runs it:
resume it); and for a running one its progress from the rows committed so far.

A sweep commits its trials in batches (every ``batch_size`` trials or few seconds:
``pipeline.sweep.stages.BatchSink``), so the committed rows are the progress a reader of the
warehouse can know: trials done of the grid, failed, incomplete, and an ETA from the rate of
final trials written since the latest invocation started.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

RunState = Literal["finished", "running", "stopped"]
LockHeld = Callable[[str], bool]
"""Whether a driver holds the run's lock now (the CLI passes pipeline's run lock)."""


@dataclass(frozen=True)
class Progress:
    done: int
    """Trials with a final outcome (passed, failed, agent error, limit)."""
    grid: int | None
    failed: int
    """Final trials that did not pass (failed, agent error, limit)."""
    incomplete: int
    """Trials whose latest attempt was an infrastructure failure (they are retried)."""
    eta_s: float | None
    """Seconds left at the rate since the latest invocation started; None when unknown."""


def run_state(open_invocation: bool, run_id: str, lock_held: LockHeld | None) -> RunState:
    if not open_invocation:
        return "finished"
    if lock_held is None or lock_held(run_id):
        return "running"
    return "stopped"


def progress(row: dict[str, object], now: datetime) -> Progress:
    """The progress of one row of ``view_runs.sql``."""
    trials, incomplete = _int(row["trials"]), _int(row["incomplete"])
    done = trials - incomplete
    grid = row["grid_size"]
    failed = _int(row["failed"]) + _int(row["agent_errors"])
    started = row["latest_started_at"]
    eta: float | None = None
    if isinstance(grid, int) and isinstance(started, datetime):
        elapsed = (now - started).total_seconds()
        recent = _int(row["done_since_latest"])
        if recent > 0 and elapsed > 0:
            eta = max(0.0, (grid - done) / (recent / elapsed))
    return Progress(done, grid if isinstance(grid, int) else None, failed, incomplete, eta)


def _int(value: object) -> int:
    return value if isinstance(value, int) else 0
