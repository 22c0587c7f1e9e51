"""Mutant reference models: each applies one deliberate defect to a golden script.

They verify the suite (the changing-intent method, "bench verification"): every defect must be
caught by the
check a scenario declares for it, and the golden script must pass everything. A mutant that
has nothing to act on in a scenario (no revision, no switch...) plays the golden script.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

Script = dict[str, Any]


def _hints(script: Script, name: str) -> dict[str, Any] | None:
    hint: dict[str, Any] | None = (script.get("mutation") or {}).get(name)
    return hint


def _set_path(state: dict[str, Any], path: str, value: Any) -> None:
    parts = path.split(".")
    node = state
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value


def _get_path(state: dict[str, Any], path: str) -> Any:
    node: Any = state
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def stale_value(script: Script) -> Script:
    """Keeps the superseded value in arguments, state and summary after the revision."""
    hint = _hints(script, "revision")
    if hint is None:
        return script
    out = copy.deepcopy(script)
    old, new = hint["old"], hint["new"]
    for turn in out["turns"][hint["turn"] - 1:]:
        for action in turn["actions"]:
            arguments = action.get("call", {}).get("arguments", {})
            for name in hint["arguments"]:
                if arguments.get(name) == new:
                    arguments[name] = old
        state = turn.get("state")
        path = hint.get("state_path")
        if state is not None and path and _get_path(state, path) == new:
            _set_path(state, path, old)
        if turn.get("summary"):
            turn["summary"] = re.sub(rf"(?<!\d){re.escape(str(new))}(?!\d)", str(old),
                                     turn["summary"])
    return out


def ignores_switch(script: Script) -> Script:
    """Still calls the function the user switched away from, and keeps its permission."""
    hint = _hints(script, "switch")
    if hint is None:
        return script
    out = copy.deepcopy(script)
    turn = out["turns"][hint["turn"] - 1]
    turn["actions"].insert(0, {"call": copy.deepcopy(hint["call"])})
    permission = hint.get("permission")
    for later in out["turns"][hint["turn"] - 1:]:
        if permission and later.get("state") is not None:
            later["state"].setdefault("permissions", {})[permission] = True
    return out


def stale_results(script: Script) -> Script:
    """Reuses search results from before a change instead of searching again."""
    fresh = script.get("fresh_calls") or []
    if not fresh:
        return script
    out = copy.deepcopy(script)
    for rule in fresh:
        turn = out["turns"][rule["turn"] - 1]
        turn["actions"] = [a for a in turn["actions"]
                           if a.get("call", {}).get("name") != rule["tool"]]
    return out


def drops_negation(script: Script) -> Script:
    """The summary / state loses the user's "do not ..." (the planner itself is unchanged)."""
    hint = _hints(script, "negation")
    if hint is None:
        return script
    out = copy.deepcopy(script)
    for turn in out["turns"][hint["turn"] - 1:]:
        if turn.get("summary"):
            turn["summary"] = re.sub(re.escape(hint["summary_find"]), hint["summary_replace"],
                                     turn["summary"], flags=re.IGNORECASE)
        permission = hint.get("permission")
        if permission and turn.get("state") is not None:
            turn["state"].setdefault("permissions", {})[permission] = True
    return out


def _replace_turning_turn(script: Script, reply_of: str) -> Script:
    """The turning turn answered with the domain's reply for this defect (its
    ``reference_replies.json``); unchanged when the domain gives none."""
    point = script.get("turning_point")
    reply = (script.get("replies") or {}).get(reply_of)
    if point is None or reply is None:
        return script
    out = copy.deepcopy(script)
    out["turns"][point - 1]["actions"] = [{"reply": reply}]
    return out


def over_reset(script: Script) -> Script:
    """After a change, asks again for every fact, including those that did not change."""
    return _replace_turning_turn(script, "over_reset")


def over_confirmation(script: Script) -> Script:
    """Asks to confirm an unambiguous revision instead of acting on it."""
    return _replace_turning_turn(script, "over_confirmation")


def false_claim(script: Script) -> Script:
    """Replaces a turn's reply with one that claims an action that never happened."""
    return _replace_reply(script, "false_claim")


def ungrounded_attribute(script: Script) -> Script:
    """Replaces a turn's reply with one that gives an entity a value its tool result lacks."""
    return _replace_reply(script, "ungrounded_attribute")


def invented_entity(script: Script) -> Script:
    """Replaces a turn's reply with one that names an entity no tool result introduced."""
    return _replace_reply(script, "invented_entity")


def _replace_reply(script: Script, name: str) -> Script:
    """A turn's last reply replaced by the reply of the scenario's hint ``name``."""
    hint = _hints(script, name)
    if hint is None:
        return script
    out = copy.deepcopy(script)
    actions = out["turns"][hint["turn"] - 1]["actions"]
    actions[-1] = {"reply": hint["reply"]}
    return out


def wrong_answer(script: Script) -> Script:
    """Answers a turn with the scenario's wrong actions (a reply, or calls and a reply, that
    break the contract: a regression case's known defect)."""
    hint = _hints(script, "wrong_answer")
    if hint is None:
        return script
    out = copy.deepcopy(script)
    out["turns"][hint["turn"] - 1]["actions"] = copy.deepcopy(hint["actions"])
    return out


def stray_write(script: Script) -> Script:
    """Makes one extra write (the scenario's hint) before a turn's reply: a stray change."""
    hint = _hints(script, "stray_write")
    if hint is None:
        return script
    out = copy.deepcopy(script)
    actions = out["turns"][hint["turn"] - 1]["actions"]
    actions.insert(len(actions) - 1, {"call": copy.deepcopy(hint["call"])})
    return out


def _is_write(action: dict[str, Any], script: Script) -> bool:
    return "call" in action and action["call"]["name"] in (script.get("write_tools") or [])


def repeats_write(script: Script) -> Script:
    """Makes the first write of the script twice in a row."""
    out = copy.deepcopy(script)
    for turn in out["turns"]:
        for index, action in enumerate(turn["actions"]):
            if _is_write(action, out):
                turn["actions"].insert(index + 1, copy.deepcopy(action))
                return out
    return script


def skips_reread(script: Script) -> Script:
    """Never reads again after its first write: answers from what it believed before."""
    out = copy.deepcopy(script)
    for turn in out["turns"]:
        first = next((i for i, a in enumerate(turn["actions"]) if _is_write(a, out)), None)
        if first is not None:
            turn["actions"] = [a for i, a in enumerate(turn["actions"])
                               if i <= first or "call" not in a or _is_write(a, out)]
    return out


def _last_write(script: Script) -> tuple[int, int] | None:
    """(turn index, action index) of the script's last write call."""
    found = None
    for t, turn in enumerate(script["turns"]):
        for a, action in enumerate(turn["actions"]):
            if _is_write(action, script):
                found = (t, a)
    return found


def drops_last_write(script: Script) -> Script:
    """Leaves out the script's last write (answers as if it had made it)."""
    where = _last_write(script)
    if where is None:
        return script
    out = copy.deepcopy(script)
    del out["turns"][where[0]]["actions"][where[1]]
    return out


CHANGED_SUFFIX = "-changed"


def changes_write_argument(script: Script) -> Script:
    """Changes one argument of the script's last write: its last string argument gets a
    suffix (a wrong zip, reason or payment method id: the server may take it or refuse it)."""
    where = _last_write(script)
    if where is None:
        return script
    out = copy.deepcopy(script)
    arguments = out["turns"][where[0]]["actions"][where[1]]["call"]["arguments"]
    strings = [k for k, v in arguments.items() if isinstance(v, str)]
    if not strings:
        return script
    arguments[strings[-1]] += CHANGED_SUFFIX
    return out


MUTANTS: dict[str, Callable[[Script], Script]] = {
    "mutant-stale-value": stale_value,
    "mutant-ignores-switch": ignores_switch,
    "mutant-stale-results": stale_results,
    "mutant-drops-negation": drops_negation,
    "mutant-over-reset": over_reset,
    "mutant-over-confirmation": over_confirmation,
    "mutant-false-claim": false_claim,
    "mutant-wrong-answer": wrong_answer,
    "mutant-stray-write": stray_write,
    "mutant-repeats-write": repeats_write,
    "mutant-skips-reread": skips_reread,
    "mutant-drops-last-write": drops_last_write,
    "mutant-changes-write-argument": changes_write_argument,
    "mutant-ungrounded-attribute": ungrounded_attribute,
    "mutant-invented-entity": invented_entity,
}
