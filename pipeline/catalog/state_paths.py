"""Dotted paths into a JSON state (``orders.1.assembly``: list items by index)."""

from __future__ import annotations

from typing import Any

_MISSING = object()


def _step(node: Any, part: str) -> Any:
    if isinstance(node, dict):
        return node.get(part, _MISSING)
    if isinstance(node, list) and part.isdigit() and int(part) < len(node):
        return node[int(part)]
    return _MISSING


def has_path(state: Any, path: str) -> bool:
    node = state
    for part in path.split("."):
        node = _step(node, part)
        if node is _MISSING:
            return False
    return True


def get_path(state: Any, path: str) -> Any:
    """The value at ``path``; KeyError when the path does not exist."""
    node = state
    for part in path.split("."):
        node = _step(node, part)
        if node is _MISSING:
            raise KeyError(path)
    return node


def set_path(state: Any, path: str, value: Any) -> None:
    """Set the existing ``path`` to ``value`` in place; KeyError when it does not exist."""
    *parents, last = path.split(".")
    node = get_path(state, ".".join(parents)) if parents else state
    if isinstance(node, dict) and last in node:
        node[last] = value
    elif isinstance(node, list) and last.isdigit() and int(last) < len(node):
        node[int(last)] = value
    else:
        raise KeyError(path)


UNCHECKED_STATE_KEYS = frozenset({"revision", "superseded", "status"})
"""Top-level keys of a golden structured state that the state check does not compare."""


def state_leaves(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """The (dotted path, value) pairs the state check compares: every leaf of a golden state
    (a list is one leaf), the ``UNCHECKED_STATE_KEYS`` left out."""
    if isinstance(value, dict):
        out: list[tuple[str, Any]] = []
        for key, item in value.items():
            if not prefix and key in UNCHECKED_STATE_KEYS:
                continue
            out.extend(state_leaves(item, f"{prefix}{key}."))
        return out
    return [(prefix.rstrip("."), value)]
