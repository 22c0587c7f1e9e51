"""Parquet writer: atomic files, one schema, a few files per run (never one per event).

Layout: ``<root>/<table>/run_id=<run_id>/part-<time>-<uuid>.parquet``. A batch's files are
written (atomically, ``warehouse.atomic``) into the hidden sibling folder
``<table>/.staged-<run_id>/`` and then renamed into the run's folder, so a reader (or a crash)
sees either the whole file or nothing, and nothing of a write in progress lives in the run's
folder (which a compaction of a running run may exchange: ``warehouse.compact_landed``). Within
a batch the ``trials`` file is written and renamed last: a trial row is the commit marker for
its events, checks and attempts. A batch that cannot be written whole (a full disk, say) is
rolled back: the files it already wrote are removed, so the warehouse never holds attempts of a
trial it does not hold. Free space is checked before a batch starts writing.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NewType

import pyarrow as pa
import pyarrow.parquet as pq

from warehouse.atomic import atomic_path, move_file
from warehouse.diskspace import NO_SPACE_ERRNOS, WRITE_RESERVE_BYTES, DiskFull, free_bytes
from warehouse.location import Root, S3Location, filesystem
from warehouse.objectstore import (
    CommitRecord,
    check_guard,
    delete_objects,
    part_key,
    put_object,
    record_key,
)
from warehouse.schema import SCHEMA_VERSION, TABLES, Table
from warehouse.store_retry import ObjectStoreUnavailable, retrying

_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
WRITE_ORDER = ("events", "checks", "condition_trials", "snapshots", "diagnostics", "attempts",
               "trials", "runs", "comparisons", "judgments")


STAGED_PREFIX = ".staged-"
"""Hidden folder beside a table's run folders where a batch's files wait for their rename."""


def staged_dir(root: Path, table: str, run_id: str) -> Path:
    return root / table / f"{STAGED_PREFIX}{run_id}"


class WarehouseError(ValueError):
    """Rows that do not fit the schema, or an unusable run id."""


RunId = NewType("RunId", str)
"""A run id that ``validate_run_id`` accepted: it names a folder and an object prefix."""


def validate_run_id(run_id: str) -> RunId:
    if not isinstance(run_id, str) or not _RUN_ID.fullmatch(run_id):  # $ would let "x\n" in
        raise WarehouseError(
            f"run id {run_id!r}: use letters, digits, '.', '_' or '-' (at most 128 characters)"
        )
    return RunId(run_id)


def table_dir(root: Path, table: str) -> Path:
    return root / table


def to_arrow(table: Table, rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    """Rows (dicts) to an Arrow table of exactly the declared schema; extra keys are an error."""
    names = table.column_names
    known = {*names, "schema_version"}
    for index, row in enumerate(rows):
        if not known.issuperset(row):
            raise WarehouseError(f"{table.name} row {index}: unknown columns "
                                 f"{sorted(set(row) - known)}")
    columns = {name: [SCHEMA_VERSION] * len(rows) if name == "schema_version"
               else [row.get(name) for row in rows] for name in names}
    try:
        return pa.Table.from_pydict(columns, schema=table.arrow_schema())
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise WarehouseError(f"{table.name}: {exc}") from exc


def write_parquet(path: Path, data: pa.Table) -> None:
    """One Parquet file, atomically (warehouse.atomic); a full disk is DiskFull."""
    try:
        with atomic_path(path) as tmp:
            pq.write_table(data, tmp, compression="zstd", write_page_checksum=True)
    except OSError as exc:
        if exc.errno in NO_SPACE_ERRNOS:
            raise DiskFull(path.parent, free_bytes(path.parent)) from None
        raise


def write_parquet_batches(path: Path, schema: pa.Schema, batches: Iterable[pa.RecordBatch],
                          row_group_rows: int) -> None:
    """One Parquet file from record batches of ``schema`` (a compacted file: warehouse.compact),
    atomically, with the same compression and page checksums as ``write_parquet``."""
    try:
        with atomic_path(path) as tmp, pq.ParquetWriter(
                tmp, schema, compression="zstd", write_page_checksum=True) as out:
            for batch in batches:
                out.write_batch(batch, row_group_size=row_group_rows)
    except OSError as exc:
        if exc.errno in NO_SPACE_ERRNOS:
            raise DiskFull(path.parent, free_bytes(path.parent)) from None
        raise


def write_parquet_object(loc: S3Location, key: str, data: pa.Table) -> None:
    """One Parquet object on object storage (the same compression and page checksums); it is
    read only once a commit record names it (``warehouse.objectstore``). A transient fault
    writes it again, whole, under the same key (``warehouse.store_retry``)."""
    retrying(f"writing {key}", lambda: pq.write_table(
        data, loc.path(key), filesystem=filesystem(), compression="zstd",
        write_page_checksum=True))


def write_parquet_object_batches(loc: S3Location, key: str, schema: pa.Schema,
                                 batches: Iterable[pa.RecordBatch], row_group_rows: int) -> None:
    """``write_parquet_batches`` to an object (a compacted file, not yet committed)."""
    with pq.ParquetWriter(loc.path(key), schema, filesystem=filesystem(), compression="zstd",
                          write_page_checksum=True) as out:
        for batch in batches:
            out.write_batch(batch, row_group_size=row_group_rows)


def prepared_batch(rows_by_table: Mapping[str, Sequence[Mapping[str, Any]]]
                   ) -> list[tuple[str, pa.Table]]:
    """A batch's rows as Arrow tables in ``WRITE_ORDER`` (the ``trials`` table last), every
    table converted before anything is written: a schema error writes nothing at all."""
    unknown = set(rows_by_table) - set(TABLES)
    if unknown:
        raise WarehouseError(f"unknown tables {sorted(unknown)}")
    return [(name, to_arrow(TABLES[name], rows_by_table[name]))
            for name in WRITE_ORDER if rows_by_table.get(name)]


def new_part_name() -> str:
    """A batch's part file name, the same in every table's folder."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
    return f"part-{stamp}-{uuid.uuid4().hex[:12]}.parquet"


def write_files(root: Path, files: Sequence[tuple[Path, pa.Table]]) -> list[Path]:
    """A batch's files, in order, after a check of free space (Arrow's in-memory size bounds
    the compressed files from above); the paths written. An error on the way (not a kill)
    removes what it wrote, last first."""
    needed = sum(data.nbytes for _, data in files) + WRITE_RESERVE_BYTES
    free = free_bytes(root)
    if free < needed:
        raise DiskFull(root, free, needed)
    written: list[Path] = []
    try:
        for path, data in files:
            write_parquet(path, data)
            written.append(path)
    except BaseException:
        for path in reversed(written):  # the trials file is last: nothing half-committed
            path.unlink(missing_ok=True)
        raise
    return written


def move_into_run(root: Path, run_id: str, staged: Sequence[Path]) -> list[Path]:
    """A batch's staged files renamed into their run folders, in order (the trials file last);
    the paths they now have. An error on the way (not a kill) removes what it moved and what
    is left staged: nothing of the batch stays."""
    moved: list[Path] = []
    try:
        for path in staged:
            target = table_dir(root, path.parent.parent.name) / f"run_id={run_id}" / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            move_file(path, target)
            moved.append(target)
    except BaseException:
        for path in [*reversed(moved), *staged]:
            path.unlink(missing_ok=True)
        raise
    return moved


def write_objects(loc: S3Location, run_id: str, prepared: Sequence[tuple[str, pa.Table]],
                  part: str) -> dict[str, list[str]]:
    """A batch's parts on object storage, under their final keys (read by nobody until a
    commit record names them); each table's keys. An error on the way (not a kill) removes
    what it wrote."""
    parts: dict[str, list[str]] = {}
    written: list[str] = []
    try:
        for name, data in prepared:
            key = part_key(name, run_id, part)
            write_parquet_object(loc, key, data)
            written.append(key)
            parts[name] = [key]
    except BaseException:
        with suppress(ObjectStoreUnavailable):  # gone: the parts stay as garbage (vacuum)
            delete_objects(loc, written)
        raise
    return parts


def commit_parts(loc: S3Location, run_id: str, part: str, parts: Mapping[str, list[str]]
                 ) -> None:
    """A batch's commit record (one conditional PUT, after the run's guard: a driver that lost
    the run's lease commits nothing more); from then on its parts are read."""
    record = CommitRecord(record_key(run_id, part.removesuffix(".parquet")), run_id, "batch",
                          dict(parts))
    check_guard(loc, run_id)
    put_object(loc, record.key, record.body(), if_none_match=True)


def commit_batch(loc: S3Location, run_id: str, prepared: Sequence[tuple[str, pa.Table]],
                 part: str) -> list[str]:
    """The parts of one batch written to object storage, then its commit record; the keys
    written. An error on the way (not a kill) removes the parts: nothing of the batch was ever
    visible."""
    parts = write_objects(loc, run_id, prepared, part)
    written = [key for keys in parts.values() for key in keys]
    try:
        commit_parts(loc, run_id, part, parts)
    except BaseException:
        with suppress(ObjectStoreUnavailable):  # gone: the parts stay as garbage (vacuum)
            delete_objects(loc, written)
        raise
    return written


class WarehouseWriter:
    """Writes batches of rows for one run. Start, write batches, done: no state in between."""

    def __init__(self, root: Root, run_id: str) -> None:
        self.root = root
        self.run_id = validate_run_id(run_id)
        self.files_written: list[Path] = []
        self.objects_written: list[str] = []
        """Keys written on object storage (relative to the warehouse prefix)."""

    def write_batch(self, rows_by_table: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
        prepared = prepared_batch(rows_by_table)
        part = new_part_name()
        if isinstance(self.root, S3Location):
            if prepared:
                self.objects_written.extend(commit_batch(self.root, self.run_id, prepared, part))
            return
        staged = write_files(self.root, [(staged_dir(self.root, name, self.run_id) / part, data)
                                         for name, data in prepared])
        self.files_written.extend(move_into_run(self.root, self.run_id, staged))
