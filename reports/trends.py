"""Trends across runs: the cells that regressed in a window (with what recorded input changed
between the last passing run and the first failing one) and the cells that were flaky.

The rules are SQL (``warehouse/sql/trends.sql``: ``cell_history``, ``cell_window``,
``regressions_since``; the view ``regression_attribution`` for ad-hoc SQL);
this module reads them for one window and says them as values the terminal and the viewer
show.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from warehouse.location import Root
from warehouse.query import run_named

NOTHING_CHANGED = "nothing recorded changed"
"""What a regression says when no recorded input differs (then: flakiness, or the provider)."""
_RELATIVE = re.compile(r"^\s*(\d+)\s*([dhw])\s*$")
_UNITS = {"d": "days", "h": "hours", "w": "weeks"}


class WindowError(ValueError):
    """A --since that is neither a span (30d, 12h, 2w) nor a date (2026-05-01)."""


def window_start(since: str, now: datetime | None = None) -> datetime:
    """The start of a window: ``30d`` / ``12h`` / ``2w`` back from ``now``, or a date (UTC)."""
    found = _RELATIVE.match(since)
    if found:
        amount, unit = int(found.group(1)), _UNITS[found.group(2)]
        return (now or datetime.now(UTC)) - timedelta(**{unit: amount})
    try:
        day = date.fromisoformat(since.strip())
    except ValueError:
        raise WindowError(f"--since {since!r}: expected a span such as 30d, 12h or 2w, or a "
                          "date such as 2026-05-01") from None
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


@dataclass(frozen=True)
class Cell:
    suite_id: str
    scenario_id: str
    model: str
    prompt_id: str
    memory_mode: str

    @property
    def title(self) -> str:
        return f"{self.scenario_id} / {self.model} / {self.prompt_id} / {self.memory_mode}"


@dataclass(frozen=True)
class Change:
    input: str
    before: str
    after: str


@dataclass(frozen=True)
class Regression:
    cell: Cell
    runs: int
    last_passing_run: str
    last_passing_at: datetime
    first_failing_run: str
    first_failing_at: datetime
    failing_passed: int
    failing_judged: int
    changes: tuple[Change, ...]

    @property
    def what_changed(self) -> str:
        return ", ".join(c.input for c in self.changes) or NOTHING_CHANGED


@dataclass(frozen=True)
class FlakyCell:
    cell: Cell
    runs: int
    passed: int
    judged: int
    pass_rate: float


@dataclass(frozen=True)
class Trends:
    since: datetime
    regressions: tuple[Regression, ...]
    flaky: tuple[FlakyCell, ...]


def _cell(row: dict[str, Any]) -> Cell:
    return Cell(row["suite_id"], row["scenario_id"], row["model"], row["prompt_id"],
                row["memory_mode"])


def _rows(root: Root, name: str, since: datetime) -> list[dict[str, Any]]:
    result = run_named(root, name, {"since": since}, all_runs=True)
    return [dict(zip(result.columns, row, strict=True)) for row in result.rows]


def load_trends(root: Root, since: datetime) -> Trends:
    """The regressions and the flaky cells among the runs started since ``since``."""
    regressions = tuple(
        Regression(_cell(r), r["runs"], r["last_passing_run"], r["last_passing_at"],
                   r["first_failing_run"], r["first_failing_at"], r["failing_passed"],
                   r["failing_judged"],
                   tuple(Change(c["input"], c["before"], c["after"]) for c in r["changed"]))
        for r in _rows(root, "regressions", since))
    flaky = tuple(FlakyCell(_cell(r), r["runs"], r["passed"], r["judged"], r["pass_rate"])
                  for r in _rows(root, "flaky_cells", since))
    return Trends(since, regressions, flaky)


def change_text(change: Change, width: int = 12) -> str:
    """``prompt_sha256 pppppppppppp… -> qqqqqqqqqqqq…``: long hashes cut to ``width``."""
    def cut(text: str) -> str:
        return text if len(text) <= width + 1 else text[:width] + "…"
    return f"{change.input} {cut(change.before)} -> {cut(change.after)}"
