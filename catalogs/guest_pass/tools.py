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
