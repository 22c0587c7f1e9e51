"""Every turn a scenario's rules name must be a turn of its dialog.

A rule at a turn the dialog never reaches (``fresh_calls.0.turn: 5`` in a two-turn dialog, a
``turning_point`` or a mutation hint past the end) would silently never apply. Scenarios whose
user is simulated are left out: their dialog is as long as the simulator makes it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pipeline.catalog.errors import CatalogError
from pipeline.catalog.models import Scenario

TURN_KEYS = frozenset({"turn", "from_turn", "until_turn"})


def check_turns(where: str, number: int, scenario: Scenario) -> None:
    """CatalogError at the first turn reference past the dialog's last turn."""
    if scenario.user is not None:
        return
    last = len(scenario.turns)
    named = [("turning_point", scenario.turning_point)]
    named += list(_turns(scenario.expectations.model_dump(), "expectations"))
    named += list(_turns(scenario.mutation.model_dump(), "mutation"))
    for field, turn in named:
        if isinstance(turn, int) and turn > last:
            raise CatalogError(where, number, field, f"turn {turn} is past the dialog's last "
                               f"turn ({last}): the rule could never apply")


def _turns(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key in TURN_KEYS:
                yield f"{path}.{key}", item
            else:
                yield from _turns(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _turns(item, f"{path}.{index}")
