"""The expected database of a golden-replay scenario (``database.expected.golden``, tau2's DB
check): a fresh copy of the domain's database with the scenario's golden calls run, in order,
through a sandbox of its own - the same validation and the same tool code as the agent's calls.
A golden call the tools refuse changes nothing and the replay goes on (as tau2 ignores a gold
action that raises), so a task whose gold write fails expects the database without it."""

from __future__ import annotations

import json

from pipeline.catalog import CallAction, Domain, Scenario
from pipeline.database import Snapshot
from pipeline.sandbox import Sandbox, ToolOutcome


def golden_calls(scenario: Scenario) -> list[CallAction]:
    return [a for turn in scenario.turns for a in turn.golden if isinstance(a, CallAction)]


def replay_golden(domain: Domain, scenario: Scenario) -> tuple[Snapshot, list[ToolOutcome]]:
    """The database after the golden calls, and each call's outcome (its refusal, if any)."""
    sandbox = Sandbox(domain, database=scenario.database)
    outcomes = [sandbox.call(a.call.name, json.dumps(a.call.arguments, ensure_ascii=False))
                for a in golden_calls(scenario)]
    after = sandbox.snapshot()
    if after is None:
        raise ValueError(f"domain {domain.name} has no database to replay golden calls on")
    return after, outcomes
