"""A scenario's database rules checked against its domain at load time (the three-errors method):
the
domain runs its writes on a database, every allowed change names exactly one row of the seed
database and only columns it has, and faults and call counts name write tools.

The seeded database of a ``db.sql`` text is built once per process (``seed_database``): the
checks only read it, and each trial's database is a copy of it (``pipeline.environment.database``).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

from pipeline.catalog.database_models import DatabaseRules
from pipeline.catalog.domains import Domain
from pipeline.catalog.errors import CatalogError

_lock = threading.Lock()


@cache
def _seeded(sql: str) -> sqlite3.Connection:
    seed = sqlite3.connect(":memory:", check_same_thread=False)
    seed.executescript(sql)
    seed.commit()
    return seed


@contextmanager
def seed_database(sql: str) -> Iterator[sqlite3.Connection]:
    """The seeded database of one ``db.sql`` text, built once per process and shared by every
    thread: only read it (or copy it with ``backup``), and only inside this block."""
    with _lock:
        yield _seeded(sql)


def _is_write(domain: Domain, name: str) -> bool:
    tool = domain.tool(name)
    return tool is not None and tool.kind == "write"


def check_database_rules(where: str, number: int, field: str, rules: DatabaseRules,
                         domain: Domain) -> None:
    if domain.sandbox != "database" or domain.database_sql is None:
        raise CatalogError(where, number, field, f"domain {domain.name} does not run its writes "
                           "on a database (tools.json sandbox: database)")
    with seed_database(domain.database_sql) as seed:
        for index, change in enumerate(rules.setup):
            _check_change(where, number, f"{field}.setup.{index}", seed, change.table,
                          change.key, list(change.set))
        for index, change in enumerate(rules.expected.changes):
            _check_change(where, number, f"{field}.expected.changes.{index}", seed,
                          change.table, change.key, list(change.set))
    for tool in rules.expected.write_calls:
        if not _is_write(domain, tool):
            raise CatalogError(where, number, f"{field}.expected.write_calls.{tool}",
                               f"{tool!r} is not a write tool of domain {domain.name}")
    for index, fault in enumerate(rules.faults):
        if not _is_write(domain, fault.tool):
            raise CatalogError(where, number, f"{field}.faults.{index}.tool",
                               f"{fault.tool!r} is not a write tool of domain {domain.name}")


def _check_change(where: str, number: int, field: str, seed: sqlite3.Connection, table: str,
                  key: dict[str, object], columns: list[str]) -> None:
    known = [str(c[1]) for c in seed.execute(f'PRAGMA table_info("{table}")').fetchall()]
    if not known:
        raise CatalogError(where, number, f"{field}.table", f"no table {table!r} in db.sql")
    for name in [*key, *columns]:
        if name not in known:
            raise CatalogError(where, number, field, f"table {table} has no column {name!r} "
                               f"(it has: {', '.join(known)})")
    condition = " AND ".join(f'"{c}" = ?' for c in key)
    found = seed.execute(f'SELECT count(*) FROM "{table}" WHERE {condition}',
                         list(key.values())).fetchone()[0]
    if found != 1:
        raise CatalogError(where, number, f"{field}.key", f"the key names {found} rows of "
                           f"{table} in the seed database; it must name exactly one")
