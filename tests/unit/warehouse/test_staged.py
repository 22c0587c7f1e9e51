"""A batch one process stages and another commits (warehouse.staged): invisible until its
commit, whole after it, listed as a leftover when no commit takes it, on a folder and on a
loopback bucket alike."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from unit.warehouse.test_compact import RUN, _batch

from warehouse.check import leftover_paths
from warehouse.compact import remove_leftovers
from warehouse.location import Root, S3Location
from warehouse.objectstore import uncommitted
from warehouse.query import run_sql
from warehouse.staged import commit_staged, discard_staged, stage_batch
from warehouse.writer import WarehouseError


def _counts(root: Root) -> tuple[Any, ...]:
    return run_sql(root, "SELECT (SELECT count(*) FROM trials_all), (SELECT count(*) FROM "
                         "events_all), (SELECT count(*) FROM attempts_all)").rows[0]


def test_a_staged_batch_is_invisible_until_its_commit_then_whole(tmp_path: Path) -> None:
    root = tmp_path / "wh"
    batch = stage_batch(root, RUN, _batch(0, 3))
    assert batch is not None
    assert dict(batch.rows) == {"events": 9, "checks": 6, "attempts": 3, "trials": 3}
    assert [name for name, _ in batch.rows][-1] == "trials"  # the commit marker goes last
    assert _counts(root) == (0, 0, 0)
    assert len(leftover_paths(root)) == 4  # listed until committed

    commit_staged(root, batch)
    assert _counts(root) == (3, 9, 3)
    assert leftover_paths(root) == []


def test_a_batch_no_commit_takes_is_removed_with_the_runs_leftovers(tmp_path: Path) -> None:
    root = tmp_path / "wh"
    commit_staged(root, stage_batch(root, RUN, _batch(0, 2)) or pytest.fail("no batch"))
    stage_batch(root, RUN, _batch(10, 2))  # its worker died before the driver committed it
    assert len(leftover_paths(root)) == 4
    remove_leftovers(root, RUN)
    assert leftover_paths(root) == []
    assert _counts(root) == (2, 6, 2)  # nothing committed was lost


def test_a_schema_error_stages_nothing(tmp_path: Path) -> None:
    rows = _batch(0, 1)
    rows["trials"][0]["surprise"] = 1
    with pytest.raises(WarehouseError):
        stage_batch(tmp_path, RUN, rows)
    assert leftover_paths(tmp_path) == [] and not list(tmp_path.rglob("*.parquet"))


def test_on_object_storage_the_commit_is_one_record(s3_warehouse: S3Location) -> None:
    batch = stage_batch(s3_warehouse, RUN, _batch(0, 2))
    assert batch is not None
    assert len(uncommitted(s3_warehouse)) == 4 and _counts(s3_warehouse) == (0, 0, 0)
    commit_staged(s3_warehouse, batch)
    assert uncommitted(s3_warehouse) == [] and _counts(s3_warehouse) == (2, 6, 2)

    dropped = stage_batch(s3_warehouse, RUN, _batch(5, 1))
    assert dropped is not None
    discard_staged(s3_warehouse, dropped)
    assert uncommitted(s3_warehouse) == [] and _counts(s3_warehouse) == (2, 6, 2)
