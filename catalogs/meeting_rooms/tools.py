"""Read tools of the meeting-room domain. ``reserve_room`` is a write tool: intercepted."""

from __future__ import annotations

from datetime import datetime
from typing import Any


def _instant(text: str) -> datetime | None:
    """An ISO 8601 time with a UTC offset; None when it is not one (as the real system
    would refuse it: a time without an offset is ambiguous)."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def search_rooms(state: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    capacity = int(arguments["capacity"])
    starts_at = _instant(str(arguments["starts_at"]))
    if starts_at is None:
        return {"error": "starts_at must be an ISO 8601 time with a UTC offset, "
                         "e.g. 2026-08-07T15:00:00+03:00"}
    required = set(arguments.get("required_features") or [])
    matches = [
        {k: room[k] for k in ("id", "capacity", "price_per_hour", "features")}
        for room in state["rooms"]
        if room["capacity"] >= capacity
        and any(_instant(slot) == starts_at for slot in room["available"])
        and required <= set(room["features"])
    ]
    matches.sort(key=lambda room: (room["price_per_hour"], room["id"]))
    return {"rooms": matches}


READ_TOOLS = {"search_rooms": search_rooms}


def state_invariants(state: dict[str, Any]) -> list[str]:
    """The seed's domain invariants over a structured state; each broken one as a message."""
    broken = []
    permissions = state.get("permissions", {})
    constraints = state.get("constraints", {})
    if state.get("goal") == "compare_rooms":
        if permissions.get("reserve_room") is not False:
            broken.append("goal compare_rooms requires permissions.reserve_room = false")
        if constraints.get("limit") is None:
            broken.append("goal compare_rooms requires constraints.limit")
    if state.get("status") == "needs_clarification" and permissions.get("reserve_room"):
        broken.append("status needs_clarification requires permissions.reserve_room = false")
    return broken


def state_equivalent(path: str, actual: Any, expected: Any, state: Any,
                     golden: dict[str, Any]) -> bool:
    """A limit of 1 left null says the same when sort_by carries the order the golden state
    gives: "book the cheapest" books one room whatever the limit (a limit of 2, "compare the
    two cheapest", is no such case)."""
    if path != "constraints.limit" or expected != 1 or actual is not None:
        return False
    constraints = state.get("constraints") if isinstance(state, dict) else None
    wanted = golden.get("constraints", {}).get("sort_by")
    return (isinstance(constraints, dict) and wanted is not None
            and constraints.get("sort_by") == wanted)
