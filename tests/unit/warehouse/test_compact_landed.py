"""Compaction of a running run (warehouse.compact_landed): the parts that landed become a few
files while the driver goes on committing; the same rows, each once; a part committed during a
step, or a step killed at any point, loses nothing; a part no commit names stays invisible."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers.commands import cli
from unit.warehouse.test_compact import RUN, _batch

from pipeline.errors import ExitCode
from pipeline.sweep.compaction import compact_landed_run
from warehouse import compact, compact_landed
from warehouse import writer as writer_module
from warehouse.chosen import mark_of
from warehouse.compact import compact_run
from warehouse.compact_landed import compact_landed as compact_what_landed
from warehouse.compact_landed import recover_landed
from warehouse.location import S3Location
from warehouse.objectstore import committed_parts, live_records
from warehouse.query import run_sql
from warehouse.staged import commit_staged, stage_batch
from warehouse.writer import WarehouseWriter

EVERY_ROW = {
    "trials": "SELECT trial_id, attempt_id, status FROM trials_all",
    "events": "SELECT trial_id, attempt_id, seq, content FROM events_all",
    "checks": "SELECT trial_id, attempt_id, check_id FROM checks_all",
    "attempts": "SELECT trial_id, attempt_id, attempt FROM attempts_all",
}


def _rows(root: Path | S3Location) -> dict[str, list[tuple[Any, ...]]]:
    return {name: sorted(run_sql(root, sql).rows) for name, sql in EVERY_ROW.items()}


def _files(root: Path, table: str) -> list[str]:
    return sorted(p.name for p in (root / table / f"run_id={RUN}").glob("*.parquet"))


def _land(root: Path, first: int, batches: int) -> None:
    writer = WarehouseWriter(root, RUN)
    for b in range(batches):
        writer.write_batch(_batch(first + 4 * b, 4))


def test_landed_parts_become_one_file_a_step_with_every_row_once(tmp_path: Path) -> None:
    root = tmp_path / "wh"
    _land(root, 0, 5)
    before = _rows(root)
    done = compact_what_landed(root, RUN)
    assert {t.table: (t.files_before, t.files_after, t.rows) for t in done}["events"] == (
        5, 1, 60)
    assert _rows(root) == before and all(len(_files(root, t)) == 1 for t in EVERY_ROW)
    _land(root, 20, 3)  # the night goes on: the next step takes only what landed since
    after_more = _rows(root)
    (events,) = [t for t in compact_what_landed(root, RUN) if t.table == "events"]
    assert (events.files_before, events.rows) == (3, 36)
    assert _rows(root) == after_more and len(_files(root, "events")) == 2
    distinct = run_sql(root, "SELECT count(*), count(DISTINCT trial_id) FROM trials_all").rows
    assert distinct == [(32, 32)]
    assert all(name.endswith("-all.parquet") for name in _files(root, "trials"))
    assert compact_what_landed(root, RUN) == []  # nothing new: nothing rewritten


def test_a_part_committed_during_a_step_stays_visible(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "wh"
    _land(root, 0, 4)
    staged = stage_batch(root, RUN, _batch(100, 4))
    assert staged is not None
    exchange = compact_landed.exchange_folders

    committed: list[Path] = []

    def late_commit_then_exchange(a: Path, b: Path) -> None:
        if not committed:  # the driver commits after the step listed the parts (events)
            commit_staged(root, staged)
            committed.append(b)
        exchange(a, b)

    monkeypatch.setattr(compact_landed, "exchange_folders", late_commit_then_exchange)
    compact_what_landed(root, RUN)
    assert run_sql(root, "SELECT count(*), count(DISTINCT trial_id) FROM trials").rows == [
        (20, 20)]
    assert len(run_sql(root, EVERY_ROW["events"]).rows) == 60


def test_a_step_killed_after_its_exchange_is_finished_by_the_next(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "wh"
    _land(root, 0, 4)
    staged = stage_batch(root, RUN, _batch(100, 4))
    assert staged is not None
    exchange = compact_landed.exchange_folders

    def killed_after_exchange(a: Path, b: Path) -> None:
        commit_staged(root, staged)
        exchange(a, b)
        raise KeyboardInterrupt  # killed before the late part is moved back

    monkeypatch.setattr(compact_landed, "exchange_folders", killed_after_exchange)
    with pytest.raises(KeyboardInterrupt):
        compact_landed.compact_landed_table(root, compact_landed.TABLES["trials"], RUN)
    monkeypatch.undo()
    # the late part sits in the hidden folder: invisible, never twice
    assert run_sql(root, "SELECT count(*), count(DISTINCT trial_id) FROM trials_all").rows == [
        (16, 16)]
    assert recover_landed(root, RUN) == 1
    assert run_sql(root, "SELECT count(*), count(DISTINCT trial_id) FROM trials_all").rows == [
        (20, 20)]
    assert not list((root / "trials").glob(".landed-*"))


def test_a_step_killed_before_its_exchange_leaves_the_run_as_it_was(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "wh"
    _land(root, 0, 4)
    before, files = _rows(root), _files(root, "trials")

    def killed(a: Path, b: Path) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(compact_landed, "exchange_folders", killed)
    with pytest.raises(KeyboardInterrupt):
        compact_what_landed(root, RUN)
    monkeypatch.undo()
    assert _rows(root) == before and _files(root, "trials") == files
    compact_run(root, RUN)  # the run's own compaction clears the step's leftovers first
    assert _rows(root) == before and not list((root / "trials").glob(".landed-*"))


def test_a_part_no_commit_names_stays_invisible(tmp_path: Path) -> None:
    root = tmp_path / "wh"
    _land(root, 0, 3)
    assert stage_batch(root, RUN, _batch(100, 4)) is not None  # staged, never committed
    compact_what_landed(root, RUN)
    assert run_sql(root, "SELECT count(*) FROM trials_all").rows == [(12,)]


def test_a_batch_the_driver_writes_during_a_step_lands_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "wh"
    _land(root, 0, 3)
    real = writer_module.pq.write_table
    stepped: list[int] = []

    def write_then_step(*args: Any, **kwargs: Any) -> None:
        real(*args, **kwargs)  # a file of the batch written, not yet renamed into place
        if not stepped:
            stepped.append(len(compact_what_landed(root, RUN)))

    monkeypatch.setattr(writer_module.pq, "write_table", write_then_step)
    WarehouseWriter(root, RUN).write_batch(_batch(100, 4))
    assert stepped == [4]  # the step exchanged every table's folder mid-batch
    assert run_sql(root, "SELECT count(*), count(DISTINCT trial_id) FROM trials_all").rows == [
        (16, 16)]
    assert len(run_sql(root, EVERY_ROW["events"]).rows) == 48


def test_on_object_storage_a_step_replaces_the_records_it_read_and_no_other(
        s3_warehouse: S3Location, monkeypatch: pytest.MonkeyPatch) -> None:
    out = WarehouseWriter(s3_warehouse, RUN)
    for b in range(4):
        out.write_batch(_batch(4 * b, 4))
    before = _rows(s3_warehouse)
    done = compact_landed_run(s3_warehouse, RUN)
    assert {t.table: t.files_before for t in done}["trials"] == 4
    assert len(live_records(s3_warehouse, [RUN])) == 1  # what a cold reader GETs
    assert _rows(s3_warehouse) == before
    for b in range(4, 6):
        out.write_batch(_batch(4 * b, 4))
    rewrite = compact._write_sorted_objects
    landed_meanwhile: list[int] = []

    def a_batch_lands_meanwhile(*args: Any) -> Any:
        if not landed_meanwhile:  # the driver commits while the step writes
            out.write_batch(_batch(100, 4))
            landed_meanwhile.append(1)
        return rewrite(*args)

    monkeypatch.setattr(compact, "_write_sorted_objects", a_batch_lands_meanwhile)
    compact_landed_run(s3_warehouse, RUN)
    monkeypatch.setattr(compact, "_write_sorted_objects", rewrite)  # keep the AWS env
    assert len(live_records(s3_warehouse, [RUN])) == 2
    assert run_sql(s3_warehouse, "SELECT count(*), count(DISTINCT trial_id) FROM trials_all"
                   ).rows == [(28, 28)]
    marks = [mark_of(k) for k in committed_parts(s3_warehouse, [RUN])["trials"]]
    assert marks.count("all") == 2 and marks.count(None) == 1


def test_the_command_compacts_what_landed_of_one_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "wh"
    _land(root, 0, 3)
    monkeypatch.setenv("AGENTSWEEP_WAREHOUSE", str(root))
    code, out, err = cli("warehouse", "compact", "--landed", "--run-id", RUN)
    assert code == 0 and f"{RUN}: 12 file(s) -> 4" in out, out + err
    assert len(_files(root, "trials")) == 1
    code, out, err = cli("warehouse", "compact", "--landed")
    assert code == ExitCode.BAD_INPUT and "--run-id" in out + err
