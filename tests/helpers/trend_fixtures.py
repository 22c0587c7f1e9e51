"""A synthetic nightly series for the trends tests: 30 nights of one suite, a cell that
passes every night, one that breaks on a chosen night (with or without a recorded input
changing then), and one that flips between passing and failing."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

from helpers.gate_fixtures import T0, run_row, trial

from warehouse.writer import WarehouseWriter

Change = Literal["prompt", "model_version", "none"]
PROMPT_BEFORE, PROMPT_AFTER = "p" * 64, "q" * 64
NIGHTS = 30
BREAK_NIGHT = 20
"""The first failing night of the BREAKS cell (1-based)."""
REPEATS = 3


def night_id(night: int) -> str:
    return f"nightly-{night:02d}"


def _cell(run_id: str, scenario: str, passes: list[bool], night: int, change: Change,
          ) -> list[dict[str, Any]]:
    changed = night >= BREAK_NIGHT
    at = T0 + timedelta(days=night)
    rows = []
    for repeat, passed in enumerate(passes):
        row = trial(run_id, scenario, repeat, passed)
        row.update(started_at=at, finished_at=at, suite_id="nightly_suite",
                   prompt_sha256=PROMPT_AFTER if changed and change == "prompt"
                   else PROMPT_BEFORE,
                   model_version="v2" if changed and change == "model_version" else "v1",
                   tools_sha256="t" * 64, suite_sha256="s" * 64, temperature=0.0,
                   generation_params='{"temperature": 0.0}')
        rows.append(row)
    return rows


def series(root: Path, change: Change, nights: int = NIGHTS) -> list[str]:
    """Write the series; its run ids, oldest first. STEADY passes 3/3 every night; BREAKS
    passes 3/3 until ``BREAK_NIGHT`` and 0/3 from then on (``change`` says which recorded
    input changed that night, if any); FLAKY passes 3/3 on even nights, 2/3 on odd ones."""
    ids = []
    for night in range(1, nights + 1):
        run_id = night_id(night)
        broken = night >= BREAK_NIGHT
        trials = [*_cell(run_id, "STEADY", [True] * REPEATS, night, change),
                  *_cell(run_id, "BREAKS", [not broken] * REPEATS, night, change),
                  *_cell(run_id, "FLAKY", [True, True, night % 2 == 0], night, change)]
        runs = run_row(run_id, {})
        runs.update(started_at=T0 + timedelta(days=night),
                    finished_at=T0 + timedelta(days=night, hours=1),
                    suite_ids=["nightly_suite"], models=["m/a"], grid_size=len(trials),
                    trials_run=len(trials), argv="python -m flows.nightly")
        WarehouseWriter(root, run_id).write_batch({"trials": trials, "runs": [runs]})
        ids.append(run_id)
    return ids
