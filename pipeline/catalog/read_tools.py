"""Building blocks for a domain's read tools (``catalogs/<domain>/tools.py``): look an item
up in the state by key and answer with a copy of it, or with an error the agent can read."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

ReadTool = Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]
"""``tool(state, arguments) -> result``: a read tool never changes the state."""


def find(items: list[dict[str, Any]], key: str, value: Any) -> dict[str, Any] | None:
    """The first item whose ``key`` equals ``value``, or None."""
    return next((item for item in items if item.get(key) == value), None)


def lookup(collection: str, key: str, argument: str, missing: str) -> ReadTool:
    """A read tool answering with a copy of the item of ``state[collection]`` whose ``key``
    equals ``arguments[argument]``; ``{"error": missing.format(value)}`` when none does."""

    def tool(state: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
        value = arguments[argument]
        item = find(state[collection], key, value)
        if item is None:
            return {"error": missing.format(value)}
        return copy.deepcopy(item)

    return tool
