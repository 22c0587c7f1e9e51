"""Which mutants a golden-replay scenario must catch: a mutant whose calls leave another
database than the golden calls do must fail ``database:tables``; one whose changes make no
difference (a repeated write the server refuses, or one that writes what is already there)
must pass. Decided by replaying each mutant's calls on a fresh copy, with the domain's tools."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pipeline.catalog import Domain, Scenario
from pipeline.environment.expected_state import replay, replay_golden
from pipeline.reference.mutants import MUTANTS
from pipeline.reference.reference import golden_script


def _calls(script: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(a["call"]["name"], a["call"]["arguments"])
            for turn in script["turns"] for a in turn["actions"] if "call" in a]


def database_catches(domain: Domain, scenario: Scenario, mutants: Sequence[str]
                     ) -> list[dict[str, Any]]:
    """The ``catches`` of ``scenario`` (chat mode) for each of ``mutants`` that makes a
    difference to the database."""
    expected, _ = replay_golden(domain, scenario)
    script = golden_script(scenario, domain)
    out = []
    for mutant in mutants:
        mutated = MUTANTS[mutant.removeprefix("reference/")](script)
        if replay(domain, scenario.database, _calls(mutated))[0] != expected:
            out.append({"mutant": mutant, "check": "database:tables", "modes": ["chat"]})
    return out
