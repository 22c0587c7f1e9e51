"""Checks of a database scenario (the three-errors method): the whole database after the dialog
against the
expected one (the initial database plus the one allowed change), the count of effects, the
number of write calls, and the diagnostics chosen in advance.

The whole database is compared, every table and every row, so a correct change to one order
cannot hide a stray change to another; the differences (rows and columns) are the check's
detail. Effects are what the sandbox counted per call (rows changed; an idempotent repeat
changes none), so a write that answered with an error after committing still counts. Pure
functions of the trace's snapshots and events.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pipeline.catalog import Domain
from pipeline.catalog.database_models import (
    TIMEOUT_MESSAGE,
    DatabaseRules,
    DiagnosticName,
    RowChange,
)
from pipeline.scoring.journal import Call, Journal
from pipeline.scoring.results import CheckResult
from pipeline.scoring.values import same_value

Tables = Mapping[str, Mapping[str, Any]]
"""A snapshot: table -> {"key": [...], "columns": [...], "rows": [...]}
(pipeline.environment.database)."""
DETAIL_LIMIT = 20
"""Differences listed in a check's detail (the count is always given)."""


def _matches(row: Mapping[str, Any], key: Mapping[str, Any]) -> bool:
    return all(same_value(row.get(column), value) for column, value in key.items())


def expected_tables(before: Tables, changes: Sequence[RowChange]) -> dict[str, Any]:
    """``before`` with every allowed change applied (to each row its key matches)."""
    expected = copy.deepcopy(dict(before))
    for change in changes:
        for row in expected.get(change.table, {}).get("rows", []):
            if _matches(row, change.key):
                row.update(change.set)
    return expected


def _key_of(row: Mapping[str, Any], columns: Sequence[str]) -> str:
    return json.dumps([row.get(c) for c in columns], ensure_ascii=False, default=str)


def table_diff(expected: Tables, actual: Tables) -> list[dict[str, Any]]:
    """Every difference: a missing or extra table or row, or a column with another value."""
    diff: list[dict[str, Any]] = []
    for table in sorted(set(expected) | set(actual)):
        if table not in actual or table not in expected:
            diff.append({"table": table, "problem": "missing table" if table not in actual
                         else "unexpected table"})
            continue
        key = list(expected[table]["key"])
        wanted = {_key_of(r, key): r for r in expected[table]["rows"]}
        got = {_key_of(r, key): r for r in actual[table]["rows"]}
        for row_key in sorted(set(wanted) | set(got)):
            if row_key not in got:
                diff.append({"table": table, "key": json.loads(row_key), "problem": "row gone"})
            elif row_key not in wanted:
                diff.append({"table": table, "key": json.loads(row_key),
                             "problem": "unexpected row"})
            else:
                for column in sorted(set(wanted[row_key]) | set(got[row_key])):
                    before, after = wanted[row_key].get(column), got[row_key].get(column)
                    if not same_value(after, before):
                        diff.append({"table": table, "key": json.loads(row_key),
                                     "column": column, "expected": before, "actual": after})
    return diff


def _detail(diff: list[dict[str, Any]]) -> str:
    shown = json.dumps(diff[:DETAIL_LIMIT], ensure_ascii=False, default=str)
    more = f" (+{len(diff) - DETAIL_LIMIT} more)" if len(diff) > DETAIL_LIMIT else ""
    return f"{len(diff)} difference(s) from the expected database: {shown}{more}"


def _writes(journal: Journal, domain: Domain) -> list[Call]:
    return [c for c in journal.attempted if _is_write(c.name, domain)]


def _is_write(name: str, domain: Domain) -> bool:
    spec = domain.tool(name)
    return spec is not None and spec.kind == "write"


def _at(call: Call | None) -> tuple[int | None, int | None]:
    return (call.turn, call.step) if call is not None else (None, None)


def _past(calls: Sequence[Call], allowed: int, weight: Callable[[Call], int]) -> Call | None:
    """The call at which the running total of ``weight`` first exceeds ``allowed``."""
    total = 0
    for call in calls:
        total += weight(call)
        if total > allowed:
            return call
    return None


def _tables_check(rules: DatabaseRules, snapshots: Mapping[str, Any],
                  changed: Sequence[Call]) -> CheckResult:
    """The whole database after the dialog against the expected one: the initial one plus the
    allowed changes, or (``golden``) the one the golden calls left (phase ``expected``)."""
    golden = rules.expected.golden
    before, after = snapshots.get("before"), snapshots.get("after")
    expected = snapshots.get("expected") if golden else (
        expected_tables(before, rules.expected.changes) if before is not None else None)
    if expected is None or after is None:
        return CheckResult("database:tables", "database_state", False, None, None,
                           "the trial recorded no database snapshot", "function")
    diff = table_diff(expected, after)
    turn, step = _at(changed[-1] if diff and changed else None)
    same = ("the database is the one the golden calls leave" if golden else
            "the database is the expected one (initial state + the allowed change)")
    return CheckResult("database:tables", "database_state", not diff, turn, step,
                       _detail(diff) if diff else same, "function")


def database_checks(journal: Journal, rules: DatabaseRules, snapshots: Mapping[str, Any],
                    domain: Domain) -> list[CheckResult]:
    """The table check, the effect count, the write-call counts, the diagnostics (required:
    checks; chosen: signals).
    A failure is placed at the call that made it (the last change for a table that differs,
    the first change or call too many for a count), so it sorts before a wrong reply; a
    missing change or call has no point."""
    results: list[CheckResult] = []
    changed = [c for c in journal.attempted if c.effects]
    results.append(_tables_check(rules, snapshots, changed))
    wanted = rules.expected.effects
    if wanted is not None:
        effects = sum(c.effects or 0 for c in journal.attempted)
        turn, step = _at(_past(changed, wanted, lambda c: c.effects or 0))
        results.append(CheckResult("database:effects", "database_effects", effects == wanted,
                                   turn, step, f"{effects} effect(s), expected {wanted}",
                                   "function"))
    writes = _writes(journal, domain)
    for tool, count in sorted(rules.expected.write_calls.items()):
        mine = [c for c in writes if c.name == tool]
        turn, step = _at(_past(mine, count, lambda c: 1))
        results.append(CheckResult(f"database:write_calls:{tool}", "database_effects",
                                   len(mine) == count, turn, step,
                                   f"{len(mine)} call(s) of {tool}, expected {count}",
                                   "function"))
    results.extend(_diagnostic_checks(journal, rules, domain))
    return results


def _diagnostic_checks(journal: Journal, rules: DatabaseRules,
                       domain: Domain) -> list[CheckResult]:
    """One ``diagnostic:<name>`` row per diagnostic the scenario chose: a required one is a
    check; any other, when it applies, is a recorded signal (``counted = False``), so a rule
    the prompt states but the verdict does not rest on ("read before you act") is seen beside
    every verdict."""
    values = diagnostics(journal, domain)
    final = journal.final_replies()[-1] if journal.replies else None
    results = []
    for name in dict.fromkeys([*rules.requires, *rules.diagnostics]):
        value, required = values[name], name in rules.requires
        if value is None and not required:
            continue  # a signal that does not apply (no write, no fault) is no row
        turn, step = (final.turn, final.step) if final is not None and value is False else (
            None, None)
        results.append(CheckResult(
            f"diagnostic:{name}", "diagnostic", value is not False, turn, step,
            f"{name}: {_shown(value)} ({'required' if required else 'a signal'})", "function",
            counted=required))
    return results


def _shown(value: bool | None) -> str:
    return "does not apply" if value is None else ("yes" if value else "no")


def diagnostics(journal: Journal, domain: Domain) -> dict[DiagnosticName, bool | None]:
    """The metrics chosen in advance, from the order of the calls (every call precedes the
    final reply): ``read_before_write``: a read came before the first write (null: no write);
    ``read_after_fault``: after the first call that answered with a fault, a read came (null:
    no fault); ``read_before_answer``: a read came after the last write (or, with no write, at
    all) before the final reply."""
    calls = list(journal.attempted)
    reads = [i for i, c in enumerate(calls) if not _is_write(c.name, domain)]
    writes = [i for i, c in enumerate(calls) if _is_write(c.name, domain)]
    faults = [i for i in writes if calls[i].error == TIMEOUT_MESSAGE]
    return {
        "read_before_write": any(r < writes[0] for r in reads) if writes else None,
        "read_after_fault": any(r > faults[0] for r in reads) if faults else None,
        "read_before_answer": any(r > writes[-1] for r in reads) if writes else bool(reads),
    }
