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

import pyarrow.parquet as pq

from warehouse.schema import TABLES


@dataclass(frozen=True)
class Damaged:
    path: Path
    problem: str


def parquet_files(root: Path) -> Iterator[Path]:
    for table in TABLES:
        yield from sorted((root / table).glob("run_id=*/*.parquet"))


def check_file(path: Path) -> str | None:
    """What is wrong with one file, or None."""
    table = path.parent.parent.name
    try:
        names = set(pq.read_table(path, page_checksum_verification=True).column_names)
    except Exception as exc:  # any reader error is the damage this check exists to report
        return f"{type(exc).__name__}: {(str(exc).strip() or repr(exc)).splitlines()[0]}"
    unknown = names - set(TABLES[table].column_names)
    if unknown:
        return f"columns the {table} table does not have: {sorted(unknown)}"
    return None


def leftover_paths(root: Path) -> list[Path]:
    """What an interrupted write or compaction left beside the files (never read by a query):
    hidden ``.compact-*`` folders (warehouse.compact) and ``.*.tmp`` files (warehouse.atomic)."""
    found: list[Path] = []
    for table in TABLES:
        folder = root / table
        found.extend(folder.glob(".compact-*"))
        found.extend(folder.glob("run_id=*/.*.tmp"))
    return sorted(found)


def check_warehouse(root: Path) -> tuple[int, list[Damaged]]:
    """(files read, damaged files)."""
    damaged, count = [], 0
    for path in parquet_files(root):
        count += 1
        problem = check_file(path)
        if problem is not None:
            damaged.append(Damaged(path, problem))
    return count, damaged
