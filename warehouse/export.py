"""A query's result written to a file a person names: atomically, by Python, never by DuckDB
(whose file access the ad-hoc SQL surface keeps locked)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pyarrow.parquet as pq

from warehouse.atomic import atomic_path, write_text
from warehouse.query import QueryResult


def write_result(result: QueryResult, path: Path) -> None:
    if path.suffix == ".parquet":
        with atomic_path(path) as temporary:
            pq.write_table(result.to_arrow(), temporary)
    else:
        write_text(path, _text(result, path.suffix))


def _text(result: QueryResult, suffix: str) -> str:
    if suffix == ".json":
        records = [dict(zip(result.columns, row, strict=True)) for row in result.rows]
        return json.dumps(records, default=str, ensure_ascii=False, indent=2) + "\n"
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(result.columns)
    writer.writerows(result.rows)
    return buffer.getvalue()
