"""Staged batches: one process writes a batch's part files, another commits them.

A trial worker encodes and writes its finished trials' rows itself; the driver, which holds the
run's lock or lease, only commits what the workers wrote. Until its commit a staged batch is
invisible, exactly like a batch interrupted between its parts and its commit:

- on a folder, each table's part is written (atomically, ``warehouse.atomic``) into the hidden
  sibling folder ``<table>/.staged-<run>/``, which no reader globs (readers read
  ``run_id=*/*.parquet``); the commit renames the parts into ``run_id=<run>/``, the
  ``trials`` part last (a trial row is the commit marker of its batch, as in
  ``WarehouseWriter.write_batch``);
- on object storage, the parts are written under their final keys, which nothing reads until
  a commit record names them; the commit is that record (one conditional PUT, after the run's
  guard: ``warehouse.objectstore``).

A staged batch that is never committed (its worker or the driver died) is garbage:
``warehouse check`` lists it, and on object storage ``warehouse vacuum`` removes it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from warehouse.atomic import move_file
from warehouse.location import Root, S3Location
from warehouse.objectstore import delete_objects, part_key
from warehouse.store_retry import ObjectStoreUnavailable
from warehouse.writer import STAGED_PREFIX as STAGED_PREFIX
from warehouse.writer import (
    commit_parts,
    new_part_name,
    prepared_batch,
    staged_dir,
    validate_run_id,
    write_files,
    write_objects,
)


@dataclass(frozen=True)
class StagedBatch:
    """A batch whose parts are written and not yet committed: what a commit needs."""

    run_id: str
    part: str
    """The part's file name, the same in every table folder."""
    rows: tuple[tuple[str, int], ...]
    """(table, rows) in write order, the ``trials`` part last."""


def stage_batch(root: Root, run_id: str,
                rows_by_table: Mapping[str, Sequence[Mapping[str, Any]]]) -> StagedBatch | None:
    """Write a batch's parts, invisible until ``commit_staged``; None for a batch with no rows.
    A schema error writes nothing; a failure on the way (a full disk) removes what it wrote."""
    validate_run_id(run_id)
    prepared = prepared_batch(rows_by_table)
    if not prepared:
        return None
    part = new_part_name()
    if isinstance(root, S3Location):
        write_objects(root, run_id, prepared, part)
    else:
        write_files(root, [(staged_dir(root, name, run_id) / part, data)
                           for name, data in prepared])
    return StagedBatch(run_id, part, tuple((name, data.num_rows) for name, data in prepared))


def commit_staged(root: Root, batch: StagedBatch) -> list[str]:
    """Make a staged batch visible, whole; the committed parts (paths or keys)."""
    tables = [name for name, _ in batch.rows]
    if isinstance(root, S3Location):
        parts = {name: [part_key(name, batch.run_id, batch.part)] for name in tables}
        commit_parts(root, batch.run_id, batch.part, parts)
        return [key for keys in parts.values() for key in keys]
    committed: list[str] = []
    for name in tables:  # in write order: the trials part, the commit marker, last
        target = root / name / f"run_id={batch.run_id}"
        target.mkdir(parents=True, exist_ok=True)
        move_file(staged_dir(root, name, batch.run_id) / batch.part, target / batch.part)
        committed.append(str(target / batch.part))
    return committed


def discard_staged(root: Root, batch: StagedBatch) -> None:
    """Remove a staged batch that will never be committed (best effort)."""
    if isinstance(root, S3Location):
        try:
            delete_objects(root, [part_key(n, batch.run_id, batch.part) for n, _ in batch.rows])
        except ObjectStoreUnavailable:
            pass
        return
    for name, _ in batch.rows:
        (staged_dir(root, name, batch.run_id) / batch.part).unlink(missing_ok=True)
