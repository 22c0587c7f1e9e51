"""A comparison's other side in the trace viewer: the baseline's trials of every cell that
changed, listed under the candidate's when such a cell is opened, their traces embedded (up to
``TraceOptions.baseline_traces``, one repeat per cell first), so the dialog that broke can be
read beside the one that passed the night before."""

from __future__ import annotations

from typing import Any

from reports.decision import Decision
from reports.html.context import Page
from reports.html.traces import OUTCOME_CODES, TraceOptions, outcome, traces_of
from warehouse.frames import frame_named
from warehouse.location import Root


def baseline_side(root: Root, page: Page, decision: Decision, options: TraceOptions
                  ) -> dict[str, Any]:
    """``cells``: candidate cell position -> the baseline's [trial id, repeat, outcome code,
    first-violation check, turn, step] of that cell; ``traces``: the embedded ones."""
    changed = {(t.scenario_id, t.baseline_model, t.prompt_id, t.memory_mode):
               page.cell_positions.get((t.scenario_id, t.candidate_model, t.prompt_id,
                                        t.memory_mode))
               for t in decision.transitions if t.transition != "unchanged"}
    trials = frame_named(root, "html_cell_trials", {"run_id": decision.baseline})
    cells: dict[str, list[list[Any]]] = {}
    for r in trials.iter_rows(named=True):
        position = changed.get((r["scenario_id"], r["model"], r["prompt_id"], r["memory_mode"]))
        if position is None:
            continue
        cells.setdefault(str(position), []).append([
            r["trial_id"], r["repeat"], OUTCOME_CODES[outcome(r["status"], r["passed"])],
            r["first_violation_check"], r["first_violation_turn"], r["first_violation_step"]])
    rounds = sorted((i, position, row[0]) for position, rows in cells.items()
                    for i, row in enumerate(rows))
    ids = [trial_id for _, _, trial_id in rounds[:options.baseline_traces]]
    return {"run_id": decision.baseline, "cells": cells,
            "traces": traces_of(root, decision.baseline, ids)}
