"""Compaction: a run's many small part files rewritten as a few large sorted ones, swapped in whole.

The writer leaves one set of part files per batch (``warehouse.writer``), and every query opens
every file. ``compact_run`` rewrites one run, table by table, as at most ``ROWS_PER_FILE`` rows a
file (``compact-<time>-<uuid>-<n>-<mark>.parquet``; the mark says whether every row is its
trial's chosen attempt: ``warehouse.chosen``), sorted by the trial's cell, then the trial key and
seq, then the row's original file and position, so the rows of one trial keep their order.

On a folder the new set replaces the old in one step: written into a hidden sibling folder, then
exchanged with the run's folder by ``renameat2(RENAME_EXCHANGE)``, so a reader lists the old
files or the new ones, never both, never neither, and a crash leaves one of them visible and a
hidden leftover the next compaction removes. Where the exchange is missing compaction is
refused (two renames would leave a moment with no files). On object storage the commit
records carry it (``compact_objects``). The protocol, step by step, and why a folder exchange
rather than a manifest the views read: docs/warehouse.md.

Compaction must not run beside a writer of the run: the caller holds the run lock
(``pipeline.execution.runlock``); this module imports nothing of ours but the warehouse.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pyarrow as pa

from warehouse.atomic import NoAtomicExchange, exchange_folders, fsync_dir, move_file
from warehouse.chosen import (
    ATTEMPT_TABLES,
    COMPACTED_PREFIX,
    Mark,
    all_chosen,
    compacted_name,
    is_compacted,
    mark_of,
)
from warehouse.diskspace import WRITE_RESERVE_BYTES, DiskFull, free_bytes
from warehouse.landed_notes import landed_lock, recover_landed
from warehouse.location import Root, S3Location
from warehouse.object_reads import duckdb_filesystem
from warehouse.objectstore import (
    commit_replacement,
    committed_parts,
    delete_objects,
    live_records,
    part_key,
    remove_replaced,
    run_ids,
)
from warehouse.query import sql_text
from warehouse.schema import TABLES, Table
from warehouse.writer import (
    staged_dir,
    table_dir,
    validate_run_id,
    write_parquet_batches,
    write_parquet_object_batches,
)

ROWS_PER_FILE = 1_000_000
"""Rows in one compacted file at most (a few large files per run and table)."""
ROW_GROUP_ROWS = 128 * 1024
STAGING_PREFIX = ".compact-"
"""Hidden folders beside ``run_id=*``: staged new sets or retired old ones (leftovers)."""
CELL_ORDER = ("scenario_id", "model", "prompt_id", "memory_mode", "repeat")
TRIAL_ORDER = ("trial_id", "attempt_id", "seq", "invocation_id")


class CompactionError(RuntimeError):
    """Compaction cannot be done safely here (no atomic folder exchange, unreadable files)."""


@dataclass(frozen=True)
class TableCompaction:
    table: str
    files_before: int
    files_after: int
    rows: int


def sort_columns(table: Table) -> list[str]:
    """The columns a compacted file of ``table`` is sorted by (the row's original file and
    position break ties, so a trial's rows keep their order)."""
    names = set(table.column_names)
    return [c for c in (*CELL_ORDER, *TRIAL_ORDER) if c in names]


def run_folders(root: Root) -> list[str]:
    """Every run id that has a folder in some table (on object storage: a commit record)."""
    if isinstance(root, S3Location):
        return run_ids(root)
    found = {p.name.removeprefix("run_id=") for name in TABLES
             for p in table_dir(root, name).glob("run_id=*") if p.is_dir()}
    return sorted(found)


def leftovers(root: Path) -> list[Path]:
    """Hidden folders an interrupted compaction left (never read by a query)."""
    return sorted(p for name in TABLES for p in table_dir(root, name).glob(f"{STAGING_PREFIX}*"))


def _run_leftovers(root: Path, run_id: str) -> list[Path]:
    return [p for p in leftovers(root) if p.name.startswith(f"{STAGING_PREFIX}{run_id}+")]


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _spill(staged: Path) -> Path:
    """Where DuckDB's sort spills a run too large for memory: a hidden leftover if killed."""
    return staged.with_name(f"{staged.name}-spill")


def _sorted_batches(files: Sequence[str], table: Table, spill: Path,
                    objects: bool = False) -> Iterator[pa.RecordBatch]:
    """The rows of ``files`` in compaction order, in batches of the table's schema (``objects``:
    the files are DuckDB paths of object storage, read through its registered file system)."""
    order = ", ".join([*(f'"{c}"' for c in sort_columns(table)), "filename", "file_row_number"])
    sql = sql_text("compact_read").format(
        files=", ".join(_quote(f) for f in files), order=order)
    con = _connection(objects)
    con.execute(f"SET temp_directory = {_quote(str(spill))}")
    try:
        reader: pa.RecordBatchReader = con.sql(sql).to_arrow_reader(ROW_GROUP_ROWS)
        schema = table.arrow_schema()
        for batch in reader:
            yield _conform(batch, schema)
    finally:
        con.close()


def _conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """A batch in the table's own schema: files of older versions lack newer columns (null)."""
    present = set(batch.schema.names)
    unknown = present - set(schema.names)
    if unknown:
        raise CompactionError(f"columns a warehouse table does not have: {sorted(unknown)} "
                              "(`agentsweep warehouse check` names the file)")
    arrays = [batch.column(f.name).cast(f.type) if f.name in present
              else pa.nulls(batch.num_rows, f.type) for f in schema]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _chunks(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[list[pa.RecordBatch], int]]:
    """The batches grouped into files of at most ``ROWS_PER_FILE`` rows (and their rows)."""
    pending: pa.RecordBatch | None = next(batches, None)
    while pending is not None:
        chunk: list[pa.RecordBatch] = []
        in_file = 0
        while pending is not None and in_file < ROWS_PER_FILE:
            chunk.append(pending)
            in_file += pending.num_rows
            pending = next(batches, None)
        yield chunk, in_file


def _stem() -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
    return f"{COMPACTED_PREFIX}{stamp}-{uuid.uuid4().hex[:12]}"


def nothing_to_do(names: Sequence[str]) -> bool:
    """No file, one part file (a run of one batch), or only marked compacted files (nothing
    written since the last compaction)."""
    if len(names) == 1 and not is_compacted(names[0]):
        return True
    return all(mark_of(n) is not None for n in names)


def _connection(objects: bool) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(":memory:")
    if objects:
        con.register_filesystem(duckdb_filesystem())
    return con


def mark_for(table: str, files: Sequence[str], trials: Sequence[str], objects: bool = False
             ) -> Mark:
    """What compaction may claim of a table's rows of one run (``warehouse.chosen``): chosen
    when the run has one ``trials`` row per trial id and, for another table of
    ``ATTEMPT_TABLES``, the run's trials (``trials``: their files, already compacted) are
    marked chosen and every row's (trial_id, attempt_id) is one of them."""
    if table not in ATTEMPT_TABLES:
        return "all"
    listed = ", ".join(_quote(f) for f in files)
    con = _connection(objects)
    try:
        if table == "trials":
            sql = sql_text("compact_one_row_per_trial").format(files=listed)
        elif all_chosen(trials):
            sql = sql_text("compact_rows_of_trials").format(
                files=listed, trials=", ".join(_quote(f) for f in trials))
        else:
            return "all"
        row = con.execute(sql).fetchone()
    finally:
        con.close()
    return "chosen" if row is not None and row[0] else "all"


def _write_sorted(files: Sequence[Path], table: Table, staged: Path, mark: Mark
                  ) -> tuple[int, int]:
    """The compacted files of one table in ``staged``; (files written, rows)."""
    stem = _stem()
    count = rows = 0
    for chunk, in_file in _chunks(_sorted_batches([str(f) for f in files], table,
                                                  _spill(staged))):
        write_parquet_batches(staged / compacted_name(stem, count, mark), table.arrow_schema(),
                              chunk, ROW_GROUP_ROWS)
        rows += in_file
        count += 1
    fsync_dir(staged)
    return count, rows


def _parquet_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.parquet")) if folder.is_dir() else []


def compact_table(root: Path, table: Table, run_id: str) -> TableCompaction | None:
    """One table of one run compacted and swapped in; None when there is nothing to do
    (``nothing_to_do``). Tables are compacted after ``trials``, whose files their mark reads."""
    folder = table_dir(root, table.name) / f"run_id={run_id}"
    files = _parquet_files(folder)
    if nothing_to_do([f.name for f in files]):
        return None
    needed = sum(f.stat().st_size for f in files) + WRITE_RESERVE_BYTES  # one more copy
    free = free_bytes(folder)
    if free < needed:
        raise DiskFull(folder, free, needed)
    staged = folder.with_name(f"{STAGING_PREFIX}{run_id}+{uuid.uuid4().hex[:12]}")
    staged.mkdir()
    trials = _parquet_files(table_dir(root, "trials") / f"run_id={run_id}")
    try:
        mark = mark_for(table.name, [str(f) for f in files], [str(f) for f in trials])
        written, rows = _write_sorted(files, table, staged, mark)
    except Exception:  # an error (not a kill): nothing of it stays; the old set is untouched
        shutil.rmtree(staged)
        raise
    finally:
        shutil.rmtree(_spill(staged), ignore_errors=True)
    try:
        exchange_folders(staged, folder)  # the one step that makes the new set visible
    except NoAtomicExchange as exc:
        shutil.rmtree(staged)
        raise CompactionError(f"{exc.filename}: {exc.strerror}; compaction needs an atomic "
                              "exchange of two folders (Linux renameat2), refused") from None
    _rescue_late_files(staged, folder, set(files))
    shutil.rmtree(staged)
    return TableCompaction(table.name, len(files), written, rows)


def _rescue_late_files(old: Path, new: Path, compacted: set[Path]) -> None:
    """Files renamed into the old folder after it was read (a writer without the run lock)
    join the new set: their rows are in no compacted file."""
    for path in sorted(old.glob("*.parquet")):
        if new / path.name not in compacted:
            move_file(path, new / path.name)


def remove_leftovers(root: Path, run_id: str) -> list[Path]:
    """The hidden folders an interrupted compaction of this run left, and its workers' staged
    batches that no commit took (warehouse.staged), removed (never read)."""
    found = _run_leftovers(root, run_id)
    found += [folder for name in TABLES if (folder := staged_dir(root, name, run_id)).is_dir()]
    for path in found:
        shutil.rmtree(path)
    return found


def compact_run(root: Root, run_id: str) -> list[TableCompaction]:
    """Every table of one run compacted. The caller holds the run's lock."""
    validate_run_id(run_id)
    if isinstance(root, S3Location):
        return compact_objects(root, run_id)
    with landed_lock(root, run_id):
        recover_landed(root, run_id)  # before any exchange here: late parts are moved back
        remove_leftovers(root, run_id)
        done = []
        for table in TABLES.values():
            result = compact_table(root, table, run_id)
            if result is not None:
                done.append(result)
    return done


def _write_sorted_objects(loc: S3Location, keys: Sequence[str], table: Table, run_id: str,
                          mark: Mark) -> tuple[list[str], int]:
    """The compacted objects of one table (not yet committed); (their keys, rows)."""
    stem = _stem()
    written: list[str] = []
    rows = 0
    spill = Path(tempfile.mkdtemp(prefix=".compact-spill-"))
    try:
        batches = _sorted_batches([loc.duckdb_path(k) for k in keys], table, spill, True)
        for chunk, in_file in _chunks(batches):
            key = part_key(table.name, run_id, compacted_name(stem, len(written), mark))
            written.append(key)  # before the write: a failed write's object is removed too
            write_parquet_object_batches(loc, key, table.arrow_schema(), chunk, ROW_GROUP_ROWS)
            rows += in_file
    except BaseException:
        delete_objects(loc, written)
        raise
    finally:
        shutil.rmtree(spill, ignore_errors=True)
    return written, rows


def compact_objects(loc: S3Location, run_id: str) -> list[TableCompaction]:
    """One run on object storage compacted: the new files written, then one commit record that
    lists them and replaces the records they were read from (``warehouse.objectstore``); the
    replaced parts and records are removed after. Records that land meanwhile (a judge) stay."""

    def whole(table: Table, keys: list[str], new_parts: dict[str, list[str]]) -> Rewrite | None:
        if nothing_to_do(keys):
            return None
        mark = mark_for(table.name, [loc.duckdb_path(k) for k in keys],
                        [loc.duckdb_path(k) for k in new_parts.get("trials", [])], True)
        return keys, [], mark

    return rewrite_objects(loc, run_id, whole)


Rewrite = tuple[list[str], list[str], Mark]
"""Of a table's committed parts: those to rewrite, those kept as they are, and the mark of the
files written (``warehouse.chosen``)."""


def rewrite_objects(loc: S3Location, run_id: str,
                    choose: Callable[[Table, list[str], dict[str, list[str]]], Rewrite | None]
                    ) -> list[TableCompaction]:
    """The parts of a run's live commit records rewritten, table by table as ``choose`` says
    (None: the table's parts carried over as they are; it sees the new parts of the tables
    before), then one commit record that lists the new and kept parts and replaces the records
    read: the one step readers see. Records committed meanwhile stay live beside it. A failure
    before that record removes what was written; the replaced parts and records go after."""
    records = live_records(loc, [run_id])
    parts = committed_parts(loc, records=records)
    new_parts: dict[str, list[str]] = {}
    done: list[TableCompaction] = []
    written: list[str] = []
    try:
        for table in TABLES.values():
            keys = parts.get(table.name, [])
            chosen = choose(table, keys, new_parts)
            if chosen is None:
                if keys:
                    new_parts[table.name] = keys  # carried over as they are
                continue
            rewritten, kept, mark = chosen
            new_keys, rows = _write_sorted_objects(loc, rewritten, table, run_id, mark)
            written.extend(new_keys)
            new_parts[table.name] = kept + new_keys
            done.append(TableCompaction(table.name, len(rewritten), len(new_keys), rows))
        if not done:
            return []
        commit_replacement(loc, run_id, new_parts, records)  # the one step readers see
    except BaseException:
        delete_objects(loc, written)
        raise
    remove_replaced(loc, records, new_parts)
    return done
