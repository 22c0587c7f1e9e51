"""Per-trial databases of a database domain (the three-errors method): built once per process from
the
domain's ``db.sql`` (``pipeline.catalog.database.seed_database``), copied per trial with
SQLite's backup API (never shared), and read back as snapshots: every table's rows with its
key columns, in a stable order, JSON-able.

A trial's connection (``TrackedConnection``) records, through SQLite's authorizer, every table a
statement prepared on it may write (its setup changes included); snapshots and contents of the
other tables are the seed's, read once per process and shared, so a 1,000-order database is not
read in full at every write and phase. Without that record (any other connection, or a statement
beyond row writes: schema, pragma, attach) every table is read in full."""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, partial
from typing import Any

from pipeline.catalog import Domain
from pipeline.catalog.database import seed_database
from pipeline.catalog.database_models import RowChange

Snapshot = dict[str, dict[str, Any]]
"""table -> {"key": [primary-key columns], "columns": [...], "rows": [{column: value}]}."""

Content = dict[str, Counter[tuple[Any, ...]]]
"""Every table's rows as a multiset of tuples: what "the state" is, for counting effects."""

_READS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION,
                    sqlite3.SQLITE_TRANSACTION, sqlite3.SQLITE_RECURSIVE})
_ROW_WRITES = frozenset({sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE})
_READ_PRAGMAS = frozenset({"table_info"})
_ANY = "*"
"""In ``TrackedConnection.written``: a statement that may have changed any table (schema,
pragma, attach, ...): every table is read in full."""


@dataclass(frozen=True)
class SeedReads:
    """The seed database's snapshot and content, read once per process; shared by every
    trial's reads of its untouched tables, so never mutated."""

    tables: tuple[str, ...]
    snapshot: Snapshot
    content: Content


class TrackedConnection(sqlite3.Connection):
    """A trial's database connection that knows which tables may have been written since it
    was copied from the seed (every INSERT, UPDATE or DELETE statement prepared on it, run or
    not; anything else but reads counts as writing every table)."""

    seed: SeedReads | None = None
    written: set[str]

    def track(self, seed: SeedReads) -> None:
        self.seed, self.written = seed, set()
        self.set_authorizer(partial(_record, self.written))  # no cycle back to the connection


def _record(written: set[str], action: int, table: str | None, _arg2: str | None,
            _db: str | None, _trigger: str | None) -> int:
    """SQLite's authorizer: note the table a row write names, or ``_ANY`` for any statement
    but a read; deny nothing."""
    if action in _ROW_WRITES:
        written.add(table or _ANY)
    elif action not in _READS and not (action == sqlite3.SQLITE_PRAGMA
                                       and table in _READ_PRAGMAS):
        written.add(_ANY)
    return sqlite3.SQLITE_OK


_seed_lock = threading.Lock()


def _seed_reads(sql: str) -> SeedReads:
    with _seed_lock:
        return _read_seed(sql)


@cache
def _read_seed(sql: str) -> SeedReads:
    with seed_database(sql) as seed:
        return SeedReads(tuple(_tables(seed)), _full_snapshot(seed), _full_content(seed))


def fresh_database(domain: Domain, setup: Sequence[RowChange] = ()) -> sqlite3.Connection:
    """A new in-memory copy of the domain's seeded database, for one trial only, with the
    scenario's ``setup`` changes applied (and counted as written)."""
    if domain.database_sql is None:
        raise ValueError(f"domain {domain.name} has no database (tools.json sandbox)")
    seed_reads = _seed_reads(domain.database_sql)
    copy = sqlite3.connect(":memory:", check_same_thread=False, factory=TrackedConnection)
    with seed_database(domain.database_sql) as seed:
        seed.backup(copy)
    copy.track(seed_reads)
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


def _untouched(db: sqlite3.Connection) -> tuple[SeedReads, set[str]] | None:
    """The seed's reads and the tables written since the copy, when ``db`` tracks them and
    no statement may have changed more than row contents."""
    if not isinstance(db, TrackedConnection) or db.seed is None or _ANY in db.written:
        return None
    return db.seed, db.written


def _snapshot_table(db: sqlite3.Connection, table: str) -> dict[str, Any]:
    info = db.execute(f'PRAGMA table_info("{table}")').fetchall()
    columns = [str(c[1]) for c in info]
    key = [str(c[1]) for c in sorted(info, key=lambda c: c[5]) if c[5]] or columns
    order = ", ".join(f'"{c}"' for c in key)
    rows = db.execute(f'SELECT * FROM "{table}" ORDER BY {order}').fetchall()
    return {"key": key, "columns": columns,
            "rows": [dict(zip(columns, r, strict=True)) for r in rows]}


def _content_table(db: sqlite3.Connection, table: str) -> Counter[tuple[Any, ...]]:
    return Counter(db.execute(f'SELECT * FROM "{table}"').fetchall())


def _full_snapshot(db: sqlite3.Connection) -> Snapshot:
    return {table: _snapshot_table(db, table) for table in _tables(db)}


def _full_content(db: sqlite3.Connection) -> Content:
    return {table: _content_table(db, table) for table in _tables(db)}


def snapshot(db: sqlite3.Connection) -> Snapshot:
    """Every table's rows in key order. A tracked trial database's untouched tables are the
    seed's own (shared, read once per process): never mutate a snapshot."""
    known = _untouched(db)
    if known is None:
        return _full_snapshot(db)
    seed, written = known
    return {table: _snapshot_table(db, table) if table in written else seed.snapshot[table]
            for table in seed.tables}


def content(db: sqlite3.Connection) -> Content:
    """Every table's rows as a multiset; untouched tables shared as in ``snapshot``."""
    known = _untouched(db)
    if known is None:
        return _full_content(db)
    seed, written = known
    return {table: _content_table(db, table) if table in written else seed.content[table]
            for table in seed.tables}


def changed_rows(before: Content, after: Content) -> int:
    """Rows whose content differs (an updated row counts once: gone and come back changed)."""
    total = 0
    for table in set(before) | set(after):
        old, new = before.get(table, Counter()), after.get(table, Counter())
        if old is not new:
            total += _changed_in(old, new)
    return total


def _changed_in(old: Counter[tuple[Any, ...]], new: Counter[tuple[Any, ...]]) -> int:
    if sum(old.values()) == len(old) and sum(new.values()) == len(new):  # no repeated row
        return max(len(old.keys() - new.keys()), len(new.keys() - old.keys()))
    return max(sum((old - new).values()), sum((new - old).values()))


def _row_keys(rows: Sequence[dict[str, Any]], key: Sequence[str]) -> list[tuple[Any, ...]]:
    """Each row's values of the ``key`` columns (None for a column it lacks)."""
    return [tuple(map(row.get, key)) for row in rows]


def _differing(present: list[dict[str, Any]],
               keys: list[list[tuple[Any, ...]]]) -> set[tuple[Any, ...]]:
    """The keys of the rows that differ between the phases that have the table."""
    if all(content_ is present[0] for content_ in present):
        return set()
    seen: dict[tuple[Any, ...], list[Any]] = {}
    for content_, row_keys in zip(present, keys, strict=True):
        for row, row_key in zip(content_["rows"], row_keys, strict=True):
            seen.setdefault(row_key, []).append(row)
    return {k for k, rows in seen.items()
            if len(rows) != len(present) or any(r != rows[0] for r in rows)}


def changed_only(phases: dict[str, Snapshot]) -> dict[str, Snapshot]:
    """The snapshots of several phases with only the rows that differ between them (by key:
    a row missing in a phase, or with other content): two phases compare the same way as
    whole, and a 1,000-order database stores a few rows per trial instead of megabytes."""
    tables = sorted({t for snap in phases.values() for t in snap})
    keys: dict[tuple[int, tuple[str, ...]], list[tuple[Any, ...]]] = {}
    differing: dict[str, set[tuple[Any, ...]]] = {}
    for table in tables:
        present = [snap[table] for snap in phases.values() if table in snap]
        key = tuple(present[0]["key"])
        differing[table] = _differing(present, [
            _keys_of(keys, c, key) for c in present] if any(
                c is not present[0] for c in present) else [])
    out: dict[str, Snapshot] = {}
    for phase, snap in phases.items():
        out[phase] = {}
        for table, content_ in snap.items():
            wanted = differing[table]
            out[phase][table] = {**content_, "rows": [
                r for r, k in zip(content_["rows"], _keys_of(keys, content_,
                                                             tuple(content_["key"])), strict=True)
                if k in wanted] if wanted else []}
    return out


def _keys_of(cache: dict[tuple[int, tuple[str, ...]], list[tuple[Any, ...]]],
             content_: dict[str, Any], key: tuple[str, ...]) -> list[tuple[Any, ...]]:
    """``_row_keys`` of a table's rows, computed once per table object and key."""
    found = cache.get((id(content_), key))
    if found is None:
        found = cache[(id(content_), key)] = _row_keys(content_["rows"], key)
    return found
