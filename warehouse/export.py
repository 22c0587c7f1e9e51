"""A query's result written to a file a person names: atomically, by Python, never by DuckDB
(whose file access the ad-hoc SQL surface keeps locked)."""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from pathlib import Path

import pyarrow.parquet as pq

from warehouse.query import QueryResult


def write_result(result: QueryResult, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(handle)
    try:
        if path.suffix == ".parquet":
            pq.write_table(result.to_arrow(), temporary)
        else:
            Path(temporary).write_text(_text(result, path.suffix), "utf-8")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _text(result: QueryResult, suffix: str) -> str:
    if suffix == ".json":
        records = [dict(zip(result.columns, row, strict=True)) for row in result.rows]
        return json.dumps(records, default=str, ensure_ascii=False, indent=2) + "\n"
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(result.columns)
    writer.writerows(result.rows)
    return buffer.getvalue()
