"""Read tools of the guest-pass domain. The three ``*_pass*`` write tools are intercepted."""

from __future__ import annotations

import copy
from typing import Any


def get_pass_rules(state: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "today": state["today"],
        "office": state["office"],
        "rules": copy.deepcopy(state["pass_rules"]),
    }


READ_TOOLS = {"get_pass_rules": get_pass_rules}


def state_invariants(state: dict[str, Any]) -> list[str]:
    """Domain invariants over a structured state (beyond its schema); each broken one as a
    message. A pass is issued only for a complete, confirmed request (the whole-dialog method)."""
    broken = []
    permissions = state.get("permissions", {})
    constraints = state.get("constraints", {})
    if permissions.get("create_pass"):
        missing = [k for k in ("guest_name", "date", "host") if not constraints.get(k)]
        if missing:
            broken.append(f"permissions.create_pass needs constraints {', '.join(missing)}")
        if not permissions.get("confirm_pass_request"):
            broken.append("permissions.create_pass requires permissions.confirm_pass_request")
        status = state.get("status")
        if status in ("needs_clarification", "awaiting_confirmation", "paused"):
            broken.append(f"status {status} requires permissions.create_pass = false")
        if state.get("goal") != "create_pass":
            broken.append("permissions.create_pass requires goal create_pass")
    return broken
