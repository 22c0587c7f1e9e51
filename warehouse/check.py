"""``agentsweep warehouse check``: every Parquet file read whole, page checksums verified.

DuckDB does not verify page checksums (a flipped byte can give a silently wrong sum), so the
check reads each file with pyarrow, which does; it also compares each file's columns with the
schema of its table. Files are written with page checksums since schema v2.
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


def check_warehouse(root: Path) -> tuple[int, list[Damaged]]:
    """(files read, damaged files)."""
    damaged, count = [], 0
    for path in parquet_files(root):
        count += 1
        problem = check_file(path)
        if problem is not None:
            damaged.append(Damaged(path, problem))
    return count, damaged
