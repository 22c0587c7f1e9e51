"""How checks compare values and spans of turns."""

from __future__ import annotations

import json
from typing import Any


def same_value(actual: Any, expected: Any) -> bool:
    """Equality, with lists compared as sets (feature lists carry no order)."""
    if isinstance(actual, list) and isinstance(expected, list):
        try:
            return sorted(map(json.dumps, actual)) == sorted(map(json.dumps, expected))
        except TypeError:
            return actual == expected
    return bool(actual == expected)


def in_span(turn: int, from_turn: int, until_turn: int | None) -> bool:
    return turn >= from_turn and (until_turn is None or turn <= until_turn)
