"""Compaction of what has landed in a running run: its part files merged while its driver goes on.

A night commits a part file every few seconds for hours; a reader of the running night opens
every one (``warehouse.query``). ``compact_landed`` is a step of its own (any process beside
the driver; it takes no run lock, which the driver holds): per table, the run's part files
present now (never the compacted files of earlier steps) are rewritten as compacted files, and
swapped in for exactly those parts, while the driver keeps adding new ones. Each step costs
what landed since the last, and a reader sees a few compacted files and the parts of the last
minutes. The files it writes are marked ``all`` (``warehouse.chosen``): more rows of a trial may
land after, so no claim of chosen attempts is made until the run's own compaction at its end
(``warehouse.compact``) rewrites the whole run.

On object storage the swap is one commit record that lists the new files and replaces the
records read (``compact_landed_objects``), as the run's own compaction does; records the driver
commits meanwhile stay live beside it.

On a folder the swap is the folder exchange of ``warehouse.compact``: a new folder (the
compacted files, and hard links of every other file present) is exchanged with the run's
folder, and any part the driver committed into the old one meanwhile is moved back. Before the
exchange a note beside the hidden folder names the parts it replaces and the files it made, so
a step killed at any point is finished or undone by the next (``warehouse.landed_notes``,
which holds the notes and the lock the run's own compaction takes too): a committed
part is never lost, and no row is ever visible twice (the replaced parts are in the hidden
folder, which no reader globs). Steps of one run are serialised by a lock file.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

from warehouse.atomic import exchange_folders, fsync_dir, write_text
from warehouse.chosen import is_compacted
from warehouse.compact import (
    Rewrite,
    TableCompaction,
    _parquet_files,
    _spill,
    _write_sorted,
    rewrite_objects,
)
from warehouse.landed_notes import (
    LANDED_PREFIX,
    LandedNote,
    finish_step,
    landed_lock,
    note_path,
    recover_landed,
)
from warehouse.location import S3Location
from warehouse.schema import TABLES, Table
from warehouse.writer import table_dir, validate_run_id

MIN_PARTS = 2
"""Part files a table needs before a step rewrites them (one part is already one file)."""


def compact_landed_table(root: Path, table: Table, run_id: str,
                         min_parts: int = MIN_PARTS) -> TableCompaction | None:
    """One table's landed parts of a running run compacted and swapped in; None when fewer
    than ``min_parts`` have landed since the last step."""
    folder = table_dir(root, table.name) / f"run_id={run_id}"
    files = _parquet_files(folder)
    landed = [f for f in files if not is_compacted(f.name)]
    if len(landed) < min_parts:
        return None
    hidden = folder.with_name(f"{LANDED_PREFIX}{run_id}+{uuid.uuid4().hex[:12]}")
    hidden.mkdir()
    try:
        written, rows = _write_sorted(landed, table, hidden, "all")
        made = [p.name for p in _parquet_files(hidden)]
        for kept in (f for f in files if is_compacted(f.name)):
            os.link(kept, hidden / kept.name)
        fsync_dir(hidden)
        write_text(note_path(hidden), LandedNote([f.name for f in landed], made).text())
    except Exception:  # an error (not a kill): nothing of it stays; the run is untouched
        shutil.rmtree(hidden)
        note_path(hidden).unlink(missing_ok=True)
        raise
    finally:
        shutil.rmtree(_spill(hidden), ignore_errors=True)
    exchange_folders(hidden, folder)  # the one step that swaps the parts for their rows
    finish_step(hidden, folder)
    return TableCompaction(table.name, len(landed), written, rows)


def compact_landed(root: Path, run_id: str, min_parts: int = MIN_PARTS
                   ) -> list[TableCompaction]:
    """Every table's landed parts of a run compacted (the run may be running)."""
    validate_run_id(run_id)
    done = []
    with landed_lock(root, run_id):
        recover_landed(root, run_id)
        for table in TABLES.values():
            result = compact_landed_table(root, table, run_id, min_parts)
            if result is not None:
                done.append(result)
    return done


def compact_landed_objects(loc: S3Location, run_id: str, min_parts: int = MIN_PARTS
                           ) -> list[TableCompaction]:
    """A run's landed parts on object storage compacted: per table, the parts of its live
    commit records that no step compacted yet rewritten, then one record that lists them (and
    the compacted parts it keeps) and replaces the records read; records committed meanwhile
    stay live beside it. Steps of one run must not run at once (the caller holds the run's
    ``.landed`` lease: ``pipeline.sweep.compaction``)."""
    validate_run_id(run_id)

    def landed(table: Table, keys: list[str], new_parts: dict[str, list[str]]) -> Rewrite | None:
        fresh = [k for k in keys if not is_compacted(k)]
        if len(fresh) < min_parts:
            return None
        return fresh, [k for k in keys if is_compacted(k)], "all"

    return rewrite_objects(loc, run_id, landed)
