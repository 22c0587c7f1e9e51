"""What the HTML report shows of one run, read from the warehouse by named SQL (DuckDB does the
counting; polars holds the results): the header, the matrix cells, every trial's light row, the
first violations, usage, and the failure map when the run has condition trials."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from warehouse.frames import frame_named
from warehouse.location import Root
from warehouse.query import RUNS_HINT, run_named
from warehouse.writer import WarehouseError, validate_run_id

CELL_KEY = ("scenario_id", "model", "prompt_id", "memory_mode")
"""A cell of the matrix: the unit whose repeats give k/n."""


class ReportInputError(ValueError):
    """The report cannot be made from this input (an unknown run, nothing to compare)."""


@dataclass(frozen=True, eq=False)
class RunData:
    run_id: str
    invocations: pl.DataFrame
    models: pl.DataFrame
    inputs: pl.DataFrame
    statuses: pl.DataFrame
    cells: pl.DataFrame
    """html_cells.sql: one row per cell, in cell order."""
    trials: pl.DataFrame
    """html_cell_trials.sql: one light row per final trial, in cell and repeat order."""
    first_violations: pl.DataFrame
    usage: pl.DataFrame
    failure_map: pl.DataFrame
    decisions: pl.DataFrame
    condition_cells: pl.DataFrame

    def rows(self, frame: pl.DataFrame) -> list[dict[str, Any]]:
        return list(frame.iter_rows(named=True))

    @property
    def has_conditions(self) -> bool:
        return not self.failure_map.is_empty()

    def incomplete(self) -> int:
        found = self.statuses.filter(pl.col("outcome") == "incomplete")
        return int(found["trials"].sum()) if not found.is_empty() else 0


def check_run(root: Root, run_id: str) -> None:
    """ReportInputError unless the run id is valid and the warehouse holds trials of it."""
    try:
        validate_run_id(run_id)
    except WarehouseError as exc:
        raise ReportInputError(str(exc)) from None
    if not run_named(root, "trial_count", {"run_id": run_id}).rows[0][0]:
        raise ReportInputError(f"run {run_id!r} has no trials in the warehouse {root} "
                               f"({RUNS_HINT})")


def load_run(root: Root, run_id: str) -> RunData:
    """Everything but the traces; ReportInputError for an unknown run."""
    check_run(root, run_id)
    params = {"run_id": run_id}

    def frame(name: str) -> pl.DataFrame:
        return frame_named(root, name, params)

    return RunData(
        run_id=run_id, invocations=frame("html_run_invocations"),
        models=frame("html_run_models"), inputs=frame("html_run_inputs"),
        statuses=frame("html_run_statuses"), cells=frame("html_cells"),
        trials=frame("html_cell_trials"), first_violations=frame("html_first_violations"),
        usage=frame("html_usage"), failure_map=frame("failure_map_run"),
        decisions=frame("condition_decisions_run"),
        condition_cells=frame("html_condition_cells"))
