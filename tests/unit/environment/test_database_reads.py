"""Snapshots and contents of a trial's database read the seed's cached tables for the tables no
statement wrote: the outputs must be the very ones of reading every table in full."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections import OrderedDict
from collections.abc import Iterable

import pytest
from conftest import REPO, loaded_suite

from pipeline.catalog import Suite, load_domain
from pipeline.environment import database, expected_state
from pipeline.environment.database import changed_only, content, fresh_database, snapshot
from pipeline.sweep.grid import ModelConfig, expand
from pipeline.trial.run import RunContext, run_trial, tables_of

ORDERS = REPO / "catalogs" / "orders"
TAU2 = REPO / "catalogs" / "tau2_retail" / "suites" / "retail.jsonl"
MODELS = ("reference/golden", "reference/mutant-drops-last-write",
          "reference/mutant-changes-write-argument")
VOLATILE = ("attempt_id", "latency_ms", "started_at", "finished_at")


def _suites() -> list[Suite]:
    tau2 = loaded_suite(TAU2)
    wanted = {"0", "105", "24"}
    return [loaded_suite(ORDERS / "suites" / "orders.jsonl"), dataclasses.replace(
        tau2, scenarios=tuple(s for s in tau2.scenarios if s.scenario.id in wanted))]


def _stored(suites: Iterable[Suite]) -> str:
    """Every row the trials would store (snapshots, checks, events, verdicts), as JSON. The
    expected databases are replayed afresh, and not kept: a replay read under a patch here
    would otherwise be the expected database of every later trial of this process."""
    ctx = RunContext("reads", "test")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(expected_state, "_kept", OrderedDict())
        results = [run_trial(spec, ctx) for spec in expand(
            list(suites), [ModelConfig(m) for m in MODELS], ["default"], ["chat"], repeats=1)]
    tables = tables_of(results)
    for rows in tables.values():
        for row in rows:
            for name in VOLATILE:
                row.pop(name, None)
    return json.dumps(tables, sort_keys=True, default=str)


def test_the_suites_cover_setup_changes_and_writes() -> None:
    orders = _suites()[0]
    assert any(s.scenario.database is not None and s.scenario.database.setup
               for s in orders.scenarios)


def test_stored_results_are_those_of_reading_every_table(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    fast = _stored(_suites())
    with monkeypatch.context() as patch:
        patch.setattr(database, "_untouched", lambda db: None)
        full = _stored(_suites())
    assert fast == full


def test_the_comparison_fails_when_a_write_goes_unrecorded(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    with monkeypatch.context() as patch:
        patch.setattr(database, "_record", lambda *args: sqlite3.SQLITE_OK)
        database._read_seed.cache_clear()  # seed reads are not affected, but start clean
        blind = _stored(_suites())
    with monkeypatch.context() as patch:
        patch.setattr(database, "_untouched", lambda db: None)
        full = _stored(_suites())
    assert blind != full


def _plain_copy(db: sqlite3.Connection) -> sqlite3.Connection:
    copy = sqlite3.connect(":memory:")
    db.backup(copy)
    return copy


@pytest.mark.parametrize("statements", [
    ["UPDATE orders SET status = 'cancelled' WHERE id = 'o1'"],
    ["DELETE FROM orders WHERE id = 'o1'"],
    ["INSERT INTO orders SELECT 'o9', owner, status, address, item FROM orders WHERE id = 'o1'"],
    ["UPDATE orders SET status = status"],
    ["CREATE TABLE extra (id TEXT PRIMARY KEY)", "INSERT INTO extra VALUES ('x')"],
    ["CREATE TRIGGER t AFTER UPDATE ON orders BEGIN DELETE FROM orders WHERE id = 'o2'; END",
     "UPDATE orders SET status = 'cancelled' WHERE id = 'o1'"],
    ["PRAGMA foreign_keys = ON", "UPDATE orders SET status = 'cancelled' WHERE id = 'o1'"],
])
def test_reads_after_any_statement_equal_full_reads(statements: list[str]) -> None:
    domain = load_domain("orders", ORDERS)
    db = fresh_database(domain)
    first = snapshot(db)
    for sql in statements:
        db.executescript(sql)
    db.commit()
    plain = _plain_copy(db)
    assert snapshot(db) == snapshot(plain)
    assert content(db) == content(plain)
    assert changed_only({"before": first, "after": snapshot(db)}) == changed_only(
        {"before": snapshot(_plain_copy(fresh_database(domain))), "after": snapshot(plain)})
    seed = fresh_database(domain)
    assert snapshot(_plain_copy(seed)) == database._read_seed(domain.database_sql).snapshot
