"""``agentsweep warehouse check``: every Parquet file read whole, page checksums verified.

DuckDB does not verify page checksums (a flipped byte can give a silently wrong sum), so the
check reads each file with pyarrow, which does; it also compares each file's columns with the
schema of its table. Files are written with page checksums since schema v2. It also lists the
leftovers of an interrupted write or compaction (``leftover_paths``): never read, safe to remove.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from warehouse.location import Root, S3Location, filesystem
from warehouse.objectstore import committed_parts, uncommitted
from warehouse.schema import TABLES


@dataclass(frozen=True)
class Damaged:
    path: Path | str
    """The file, or ``s3://bucket/key`` of an object."""
    problem: str


def parquet_files(root: Path) -> Iterator[Path]:
    for table in TABLES:
        yield from sorted((root / table).glob("run_id=*/*.parquet"))


def check_file(path: Path) -> str | None:
    """What is wrong with one file, or None."""
    return _problem(path.parent.parent.name, str(path), None)


def _problem(table: str, path: str, fs: Any) -> str | None:
    try:
        names = set(pq.read_table(path, filesystem=fs,
                                  page_checksum_verification=True).column_names)
    except Exception as exc:  # any reader error is the damage this check exists to report
        return f"{type(exc).__name__}: {(str(exc).strip() or repr(exc)).splitlines()[0]}"
    unknown = names - set(TABLES[table].column_names)
    if unknown:
        return f"columns the {table} table does not have: {sorted(unknown)}"
    return None


def leftover_paths(root: Root) -> list[Path] | list[str]:
    """What an interrupted write or compaction left beside the files (never read by a query):
    hidden ``.compact-*`` folders (warehouse.compact), batches a worker staged that no commit
    took (``.staged-*/*.parquet``: warehouse.staged) and ``.*.tmp`` files (warehouse.atomic);
    on object storage, the objects no live commit record names."""
    if isinstance(root, S3Location):
        return [f"{root}/{g.key}" for g in uncommitted(root)]
    found: list[Path] = []
    for table in TABLES:
        folder = root / table
        found.extend(folder.glob(".compact-*"))
        found.extend(folder.glob(".staged-*/*.parquet"))
        found.extend(folder.glob("run_id=*/.*.tmp"))
    return sorted(found)


def check_warehouse(root: Root) -> tuple[int, list[Damaged]]:
    """(files read, damaged files)."""
    if isinstance(root, S3Location):
        return _check_objects(root)
    damaged, count = [], 0
    for path in parquet_files(root):
        count += 1
        problem = check_file(path)
        if problem is not None:
            damaged.append(Damaged(path, problem))
    return count, damaged


def _check_objects(loc: S3Location) -> tuple[int, list[Damaged]]:
    damaged, count = [], 0
    fs = filesystem()
    for table, keys in committed_parts(loc).items():
        for key in keys:
            count += 1
            problem = _problem(table, loc.path(key), fs)
            if problem is not None:
                damaged.append(Damaged(f"{loc}/{key}", problem))
    return count, damaged
