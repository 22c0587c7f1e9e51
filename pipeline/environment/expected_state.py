"""The expected database of a golden-replay scenario (``database.expected.golden``, tau2's DB
check): a fresh copy of the domain's database with the scenario's golden calls run, in order,
through a sandbox of its own - the same validation and the same tool code as the agent's calls.
A golden call the tools refuse changes nothing and the replay goes on (as tau2 ignores a gold
action that raises), so a task whose gold write fails expects the database without it.

A grid runs a scenario's models, modes and repeats one after another: ``expected_database``
keeps the replay of the last few scenarios of the process (about 40 ms each on tau2's retail
database, the largest share of such a trial's CPU), shared as a snapshot of the seed's
untouched tables already is (never mutated)."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from pipeline.catalog import CallAction, Domain, Scenario
from pipeline.catalog.database_models import DatabaseRules
from pipeline.environment.database import Snapshot
from pipeline.environment.sandbox import Sandbox, ToolOutcome


def golden_calls(scenario: Scenario) -> list[CallAction]:
    return [a for turn in scenario.turns for a in turn.golden if isinstance(a, CallAction)]


def replay_golden(domain: Domain, scenario: Scenario) -> tuple[Snapshot, list[ToolOutcome]]:
    """The database after the golden calls, and each call's outcome (its refusal, if any)."""
    return replay(domain, scenario.database, [(a.call.name, dict(a.call.arguments))
                                              for a in golden_calls(scenario)])


KEPT_REPLAYS = 8
"""Scenarios whose expected database a process keeps (the most recently used)."""

_kept: OrderedDict[tuple[int, int], tuple[Domain, Scenario, Snapshot]] = OrderedDict()
_kept_lock = threading.Lock()


def expected_database(domain: Domain, scenario: Scenario) -> Snapshot:
    """``replay_golden``'s database, replayed once while the scenario is among the process's
    ``KEPT_REPLAYS`` most recent (the key holds the objects themselves, so an id is never
    reused while kept)."""
    key = (id(domain), id(scenario))
    with _kept_lock:
        kept = _kept.get(key)
        if kept is not None:
            _kept.move_to_end(key)
            return kept[2]
    expected = replay_golden(domain, scenario)[0]
    with _kept_lock:
        _kept[key] = (domain, scenario, expected)
        while len(_kept) > KEPT_REPLAYS:
            _kept.popitem(last=False)
    return expected


def replay(domain: Domain, rules: DatabaseRules | None,
           calls: Sequence[tuple[str, dict[str, Any]]]) -> tuple[Snapshot, list[ToolOutcome]]:
    """The database after ``calls`` (name, arguments) on a fresh copy, and their outcomes."""
    sandbox = Sandbox(domain, database=rules)
    outcomes = [sandbox.call(name, json.dumps(arguments, ensure_ascii=False))
                for name, arguments in calls]
    after = sandbox.snapshot()
    if after is None:
        raise ValueError(f"domain {domain.name} has no database to replay golden calls on")
    return after, outcomes
