"""The trace viewer's data: a light index of every trial (what a clicked cell lists) and the
full traces of the trials the report embeds.

Full traces are embedded only for trials that did not pass (up to ``max_failed``) and a sample
of passed ones (``passed_sample``), picked round-robin over the cells by
``warehouse/sql/html_trace_pick.sql``; any other trial is listed with the command that prints
it (``agentsweep show``). Long texts are cut at ``TEXT_LIMIT`` characters, marked.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import polars as pl

from reports.html.data import CELL_KEY, RunData
from warehouse.frames import frame_named
from warehouse.location import Root

TEXT_LIMIT = 4000
"""Longest text of one event field embedded; the rest is in the warehouse."""
OUTCOME_CODES = {"passed": "p", "failed": "f", "agent_error": "e", "limit": "l",
                 "incomplete": "i"}


@dataclass(frozen=True)
class TraceOptions:
    max_failed: int = 500
    """Trials that did not pass, embedded whole at most."""
    passed_sample: int = 50
    """Passed trials embedded whole (a sample, one per cell first)."""
    baseline_traces: int = 200
    """In a comparison: the baseline's trials of the cells that changed, embedded whole at
    most (one repeat per cell first)."""
    include: tuple[str, ...] = ()
    """Trials embedded whole whatever the picking (the viewer opens the report on one)."""


def outcome(status: str, passed: bool | None) -> str:
    if status == "complete":
        return "passed" if passed else "failed"
    return status


def trial_index(run: RunData) -> dict[str, Any]:
    """``cells``: [title, first trial, end] per matrix cell; ``trials``: [id, cell, repeat,
    outcome code, first-violation check (index into ``checks``, -1 for none), turn, step]."""
    cells = run.cells.select(CELL_KEY).with_row_index("cell")
    trials = run.trials.join(cells, on=list(CELL_KEY), how="left", maintain_order="left")
    checks = sorted({c for c in trials["first_violation_check"].to_list() if c is not None})
    check_at = {c: i for i, c in enumerate(checks)}
    rows = []
    for r in trials.iter_rows(named=True):
        code = OUTCOME_CODES[outcome(r["status"], r["passed"])]
        fv = r["first_violation_check"]
        rows.append([r["trial_id"], r["cell"], r["repeat"], code,
                     check_at[fv] if fv is not None else -1, r["first_violation_turn"],
                     r["first_violation_step"]])
    ranges: dict[int, list[int]] = {}
    for position, row in enumerate(rows):
        ranges.setdefault(int(row[1]), [position, position])[1] = position + 1
    titles = [[" / ".join(str(c[k]) for k in CELL_KEY), *ranges.get(i, [0, 0])]
              for i, c in enumerate(run.cells.iter_rows(named=True))]
    return {"cells": titles, "trials": rows, "checks": checks,
            "outcomes": {v: k for k, v in OUTCOME_CODES.items()}}


def _cut(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None  # JSON has no NaN; the viewer shows a missing figure
    if isinstance(value, str) and len(value) > TEXT_LIMIT:
        return (value[:TEXT_LIMIT] + f" … [{len(value) - TEXT_LIMIT} more characters: "
                "agentsweep show prints the whole trial]")
    return value


def _records(frame: pl.DataFrame) -> dict[str, list[dict[str, Any]]]:
    """Rows grouped by trial id, null fields dropped, long texts cut, times as text."""
    out: dict[str, list[dict[str, Any]]] = {}
    for row in frame.iter_rows(named=True):
        trial_id = str(row.pop("trial_id"))
        out.setdefault(trial_id, []).append(
            {k: _cut(v if isinstance(v, str | int | float | bool) else str(v))
             for k, v in row.items() if v is not None})
    return out


def picked_trials(root: Root, run_id: str, options: TraceOptions) -> list[str]:
    picked = frame_named(root, "html_trace_pick", {
        "run_id": run_id, "max_failed": options.max_failed,
        "passed_sample": options.passed_sample})
    return [str(t) for t in picked["trial_id"].to_list()]


def embedded_traces(root: Root, run_id: str, options: TraceOptions) -> dict[str, Any]:
    """Trial id -> {row, events, checks, judgments, attempts} for the picked trials."""
    picked = picked_trials(root, run_id, options)
    return traces_of(root, run_id, [*picked, *(t for t in options.include if t not in picked)])


def traces_of(root: Root, run_id: str, ids: list[str]) -> dict[str, Any]:
    """Trial id -> {row, events, checks, judgments, attempts} for these trials of the run
    (``judgments``: the judges' majority verdicts, a separate signal)."""
    if not ids:
        return {}
    params = {"run_id": run_id, "trial_ids": ids}
    parts = {name: _records(frame_named(root, f"html_trace_{name}", params))
             for name in ("trials", "events", "checks", "judgments", "attempts")}
    return {trial_id: {"row": rows[0], "events": parts["events"].get(trial_id, []),
                       "checks": parts["checks"].get(trial_id, []),
                       "judgments": parts["judgments"].get(trial_id, []),
                       "attempts": parts["attempts"].get(trial_id, [])}
            for trial_id, rows in parts["trials"].items()}
