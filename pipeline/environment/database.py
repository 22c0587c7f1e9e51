"""Per-trial databases of a database domain (the three-errors method): built once per process from
the
domain's ``db.sql`` (``pipeline.catalog.database.seed_database``), copied per trial with
SQLite's backup API (never shared), and read back as snapshots: every table's rows with its
key columns, in a stable order, JSON-able."""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Sequence
from typing import Any

from pipeline.catalog import Domain
from pipeline.catalog.database import seed_database
from pipeline.catalog.database_models import RowChange

Snapshot = dict[str, dict[str, Any]]
"""table -> {"key": [primary-key columns], "columns": [...], "rows": [{column: value}]}."""


def fresh_database(domain: Domain, setup: Sequence[RowChange] = ()) -> sqlite3.Connection:
    """A new in-memory copy of the domain's seeded database, for one trial only, with the
    scenario's ``setup`` changes applied."""
    if domain.database_sql is None:
        raise ValueError(f"domain {domain.name} has no database (tools.json sandbox)")
    copy = sqlite3.connect(":memory:", check_same_thread=False)
    with seed_database(domain.database_sql) as seed:
        seed.backup(copy)
    for change in setup:
        assignments = ", ".join(f'"{c}" = ?' for c in change.set)
        condition = " AND ".join(f'"{c}" = ?' for c in change.key)
        copy.execute(f'UPDATE "{change.table}" SET {assignments} WHERE {condition}',
                     [*change.set.values(), *change.key.values()])
    copy.commit()
    return copy


def _tables(db: sqlite3.Connection) -> list[str]:
    rows = db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
                      "'sqlite_%' ORDER BY name").fetchall()
    return [str(r[0]) for r in rows]


def snapshot(db: sqlite3.Connection) -> Snapshot:
    out: Snapshot = {}
    for table in _tables(db):
        info = db.execute(f'PRAGMA table_info("{table}")').fetchall()
        columns = [str(c[1]) for c in info]
        key = [str(c[1]) for c in sorted(info, key=lambda c: c[5]) if c[5]] or columns
        order = ", ".join(f'"{c}"' for c in key)
        rows = db.execute(f'SELECT * FROM "{table}" ORDER BY {order}').fetchall()
        out[table] = {"key": key, "columns": columns,
                      "rows": [dict(zip(columns, r, strict=True)) for r in rows]}
    return out


Content = dict[str, Counter[tuple[Any, ...]]]
"""Every table's rows as a multiset of tuples: what "the state" is, for counting effects."""


def content(db: sqlite3.Connection) -> Content:
    return {table: Counter(db.execute(f'SELECT * FROM "{table}"').fetchall())
            for table in _tables(db)}


def changed_rows(before: Content, after: Content) -> int:
    """Rows whose content differs (an updated row counts once: gone and come back changed)."""
    total = 0
    for table in set(before) | set(after):
        old, new = before.get(table, Counter()), after.get(table, Counter())
        total += max(sum((old - new).values()), sum((new - old).values()))
    return total


def _row_key(row: dict[str, Any], key: Sequence[str]) -> tuple[Any, ...]:
    return tuple(row.get(c) for c in key)


def changed_only(phases: dict[str, Snapshot]) -> dict[str, Snapshot]:
    """The snapshots of several phases with only the rows that differ between them (by key:
    a row missing in a phase, or with other content): two phases compare the same way as
    whole, and a 1,000-order database stores a few rows per trial instead of megabytes."""
    tables = sorted({t for snap in phases.values() for t in snap})
    differing: dict[str, set[tuple[Any, ...]]] = {}
    for table in tables:
        present = [snap[table] for snap in phases.values() if table in snap]
        key = list(present[0]["key"])
        seen: dict[tuple[Any, ...], list[Any]] = {}
        for content_ in present:
            for row in content_["rows"]:
                seen.setdefault(_row_key(row, key), []).append(row)
        differing[table] = {k for k, rows in seen.items()
                            if len(rows) != len(present) or any(r != rows[0] for r in rows)}
    out: dict[str, Snapshot] = {}
    for phase, snap in phases.items():
        out[phase] = {}
        for table, content_ in snap.items():
            key = list(content_["key"])
            out[phase][table] = {**content_, "rows": [
                r for r in content_["rows"] if _row_key(r, key) in differing[table]]}
    return out
