"""Which of the warehouse's views a query needs, so a connection creates only those.

Creating a view binds it, and binding a view over the Parquet views reads the files' footers
again (``union_by_name``): creating every view of ``warehouse/sql/views.sql`` and the files
after it was the whole fixed cost of ``agentsweep sql`` (docs/performance.md).
A query needs the views its text names, and the views those read, in the files' order (a view
reads only views created before it). Names are matched as words, so a name in a string literal
or a comment creates a view it did not need: a little time, never a missing view. A query that
looks at the catalog itself (``SHOW TABLES``, ``duckdb_views()``, ``information_schema``) gets
every view.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import duckdb

_CREATED = re.compile(r"\bCREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMP(?:ORARY)?\s+)?"
                      r"(?:VIEW|MACRO|TABLE|FUNCTION)\s+(?:IF\s+NOT\s+EXISTS\s+)?"
                      r"([A-Za-z_][A-Za-z0-9_]*)", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_COMMENT = re.compile(r"--[^\n]*")
"""A line comment of our own views' SQL (their prose names views they do not read). A user's
SQL keeps its comments: ``'--'`` in a string literal must not hide the rest of the line."""
_CATALOG = re.compile(r"\b(show|describe|summarize|information_schema|pg_catalog|sqlite_master|"
                      r"duckdb_[a-z_]+|pragma_[a-z_]+)\b", re.IGNORECASE)
"""Words of a query that reads the catalog: it is shown every view."""


@dataclass(frozen=True)
class ViewStatement:
    """One statement of the views' SQL: the object it creates (None: run it always) and the
    names of the other created objects its text mentions."""

    index: int
    name: str | None
    text: str
    uses: frozenset[str]


def words(sql: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORD.findall(sql))


def plan_views(scripts: Sequence[str], base_names: Iterable[str]) -> tuple[ViewStatement, ...]:
    """The statements of ``scripts`` in order, each with what it creates and mentions.
    ``base_names``: objects the connection has before these run (the ``*_all`` views)."""
    statements = [s.query for script in scripts for s in duckdb.extract_statements(script)]
    created = [(m.group(1).lower() if (m := _CREATED.search(text)) else None)
               for text in statements]
    known = {n for n in created if n} | {n.lower() for n in base_names}
    return tuple(ViewStatement(index, name, text,
                               frozenset(words(_COMMENT.sub("", text)) & known - {name}))
                 for index, (name, text) in enumerate(zip(created, statements, strict=True)))


def wanted(plan: Sequence[ViewStatement], sql: str | None) -> frozenset[str] | None:
    """Every name of ``plan`` (and of the objects before it) a connection that runs ``sql``
    needs; None: every one (no SQL given, or a query that reads the catalog)."""
    if sql is None or _CATALOG.search(sql):
        return None
    names = set(words(sql))
    for statement in reversed(plan):  # a statement reads only what earlier ones created
        if statement.name is None or statement.name in names:
            names |= statement.uses
    return frozenset(names)


def needed(plan: Sequence[ViewStatement], names: frozenset[str] | None) -> list[ViewStatement]:
    """The statements to run, in order, for the ``names`` of ``wanted`` (None: all)."""
    return [s for s in plan if names is None or s.name is None or s.name in names]
