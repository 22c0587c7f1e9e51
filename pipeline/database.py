"""Per-trial databases of a database domain (seed 004): built once per process from the
domain's ``db.sql``, copied per trial with SQLite's backup API (never shared), and read back as
snapshots: every table's rows with its key columns, in a stable order, JSON-able."""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from collections.abc import Sequence
from functools import cache
from typing import Any

from pipeline.catalog import Domain
from pipeline.catalog.database_models import RowChange

Snapshot = dict[str, dict[str, Any]]
"""table -> {"key": [primary-key columns], "columns": [...], "rows": [{column: value}]}."""
_lock = threading.Lock()


@cache
def _template(sql: str) -> sqlite3.Connection:
    """The seeded database of one ``db.sql`` text, built once per process."""
    template = sqlite3.connect(":memory:", check_same_thread=False)
    template.executescript(sql)
    template.commit()
    return template


def fresh_database(domain: Domain, setup: Sequence[RowChange] = ()) -> sqlite3.Connection:
    """A new in-memory copy of the domain's seeded database, for one trial only, with the
    scenario's ``setup`` changes applied."""
    if domain.database_sql is None:
        raise ValueError(f"domain {domain.name} has no database (tools.json sandbox)")
    copy = sqlite3.connect(":memory:", check_same_thread=False)
    with _lock:
        _template(domain.database_sql).backup(copy)
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
