"""A run split into shards is one row of ``runs_list`` and of the viewer's index: unfinished
while its grid is not all final (open in the viewer while a shard's invocation is), finished
when the grid is, whichever shard ended first."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from helpers.gate_fixtures import T0, run_row, trial

from warehouse.query import run_named
from warehouse.writer import WarehouseWriter

RUN = "sharded"


def _shard_rows(first_done: bool, second_done: bool) -> list[dict[str, Any]]:
    """Two shards' invocations: the second started later; each finished or not."""
    rows = []
    for n, done in enumerate((first_done, second_done)):
        row = run_row(RUN, {})
        row.update(invocation_id=f"shard-{n + 1}", grid_size=4, started_at=T0 + timedelta(
            seconds=n), finished_at=T0 + timedelta(minutes=5 - n) if done else None)
        rows.append(row)
    return rows


def _listed(root: Path) -> tuple[Any, Any]:
    listed = run_named(root, "runs_list")
    index = run_named(root, "view_runs")
    return (dict(zip(listed.columns, listed.rows[0], strict=True))["finished"],
            dict(zip(index.columns, index.rows[0], strict=True))["open"])


def test_a_run_is_finished_when_its_grid_is_not_when_a_shard_is(tmp_path: Path) -> None:
    writer = WarehouseWriter(tmp_path, RUN)
    # shard 1 (started first) still runs; shard 2 finished its half of the grid
    writer.write_batch({"runs": _shard_rows(False, True),
                        "trials": [trial(RUN, "S", r, True) for r in (0, 1)]})
    assert run_named(tmp_path, "runs_list").rows.__len__() == 1
    assert _listed(tmp_path) == ("unfinished", True)
    # shard 1 was killed and a resume ran the rest: the grid is whole, the run finished
    writer.write_batch({"trials": [trial(RUN, "S", r, True) for r in (2, 3)]})
    finished, still_open = _listed(tmp_path)
    assert finished != "unfinished" and still_open is False


def test_a_shard_killed_before_it_recorded_its_start_leaves_the_run_unfinished(
        tmp_path: Path) -> None:
    """Only shard 2's invocation is recorded, and it ended: the grid is half final, so the
    run is unfinished for ``agentsweep runs`` (a resume has trials to run), though no driver
    runs it (the viewer's index shows it closed)."""
    writer = WarehouseWriter(tmp_path, RUN)
    writer.write_batch({"runs": _shard_rows(True, True)[1:],
                        "trials": [trial(RUN, "S", r, True) for r in (0, 1)]})
    assert _listed(tmp_path) == ("unfinished", False)
