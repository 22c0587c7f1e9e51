"""ACTION (tau2's definition): every expected action must match some tool call of the agent,
refused ones included (tau2 reads every tool call of the trajectory, whatever it answered).

A call matches when it has the action's name and, on the compared arguments, the same values.
With ``compare_args`` null the compared arguments are the *call's* own keys (tau2's rule at
a2c0247, kept as it is): a call that leaves out an expected argument still matches on the
rest, one with no arguments at all matches any action of its name, and one with an argument
the action lacks does not match. Calls whose arguments are not a JSON object match nothing.
Pure function of the journal.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from pipeline.catalog import ExpectedAction
from pipeline.scoring.journal import Call
from pipeline.scoring.results import CheckResult


def matches(action: ExpectedAction, call: Call) -> bool:
    if call.name != action.name or call.arguments is None:
        return False
    keys = set(call.arguments if action.compare_args is None else action.compare_args)
    return ({k: v for k, v in call.arguments.items() if k in keys}
            == {k: v for k, v in action.arguments.items() if k in keys})


def _named(action: ExpectedAction) -> str:
    arguments = json.dumps(action.arguments, sort_keys=True, ensure_ascii=False)
    compared = ("" if action.compare_args is None
                else f" on {', '.join(action.compare_args) or 'no arguments'}")
    return f"{action.name}({arguments}){compared}"


def action_check(actions: Sequence[ExpectedAction], attempted: Sequence[Call],
                 counted: bool) -> CheckResult:
    """``counted``: whether the check counts toward ``passed`` (tau2: ``action`` in the
    reward basis)."""
    missing = [a for a in actions if not any(matches(a, c) for c in attempted)]
    detail = (f"every expected action made ({len(actions)})" if not missing else
              f"{len(missing)} of {len(actions)} expected actions not made: "
              + "; ".join(_named(a) for a in missing))
    return CheckResult("action", "action", not missing, None, None, detail, "function",
                       counted=counted)
