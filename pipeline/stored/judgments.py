"""Judgments in the warehouse: rows of the ``judgments`` table, written in one batch (one
Parquet file, renamed into place: a crash leaves all of a `judge run`'s rows or none), and
read back per run or from an exported file (``judge export``)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pipeline.util.untrusted import jsonl_lines
from warehouse.atomic import write_text
from warehouse.location import Root
from warehouse.query import run_named
from warehouse.rows import JudgmentRow
from warehouse.writer import WarehouseWriter


def write_judgments(root: Root, run_id: str, rows: Sequence[JudgmentRow]) -> None:
    WarehouseWriter(root, run_id).write_batch({"judgments": [r.as_dict() for r in rows]})


def stored_judgments(root: Root, run_id: str) -> list[dict[str, Any]]:
    """The run's judgments (of its final attempts; superseded ones left out)."""
    result = run_named(root, "run_judgments", {"run_id": run_id})
    return [{k: v for k, v in zip(result.columns, row, strict=True) if k != "schema_version"}
            for row in result.rows]


def export_judgments(path: Path, rows: Iterable[Mapping[str, Any]]) -> int:
    """Write judgment rows as JSONL (atomically); returns how many."""
    lines = [json.dumps(dict(r), ensure_ascii=False, sort_keys=True, default=str) for r in rows]
    write_text(path, "".join(line + "\n" for line in lines))
    return len(lines)


def read_judgments(path: Path) -> list[dict[str, Any]]:
    """Judgment rows exported with ``judge export``."""
    return [json.loads(line) for line in jsonl_lines(path.read_text("utf-8")) if line.strip()]
