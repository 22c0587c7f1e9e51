"""What every section of one report shares: the escaper, the run's data, its trial index, and
the trial lists that clickable cells other than the matrix's open."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

from reports.html.data import RunData
from reports.html.markup import Escaper


@dataclass
class Page:
    esc: Escaper
    run: RunData
    index: dict[str, Any]
    """traces.trial_index(run)."""
    lists: list[list[Any]] = field(default_factory=list)
    """[title, trial positions in the index] per clickable list."""

    def add_list(self, title: str, positions: list[int]) -> int:
        self.lists.append([self.esc.text(title), positions])
        return len(self.lists) - 1

    @cached_property
    def cell_positions(self) -> dict[tuple[str, str, str, str], int]:
        """(scenario, model, prompt, memory mode) -> the cell's position in the matrix."""
        return {(str(c["scenario_id"]), str(c["model"]), str(c["prompt_id"]),
                 str(c["memory_mode"])): i for i, c in enumerate(self.run.rows(self.run.cells))}

    @cached_property
    def position_of(self) -> dict[str, int]:
        """Trial id -> its position in the index."""
        return {str(row[0]): i for i, row in enumerate(self.index["trials"])}


def fmt_time(value: datetime | None, missing: str = "unknown") -> str:
    return missing if value is None else value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def fmt_number(value: float | int | None, digits: int = 0, unit: str = "") -> str:
    """A figure for people: None is "unknown", never 0."""
    if value is None:
        return "unknown"
    if digits:
        return f"{value:,.{digits}f}{unit}"
    return f"{round(value):,}{unit}"


def fmt_money(value: float | None) -> str:
    return "unknown" if value is None else f"${value:,.4f}"


def fmt_ms(value: float | None) -> str:
    return "unknown" if value is None else f"{value / 1000:,.2f} s"
