"""Broken reference models: each emits one kind of malformed output real models produce.

Where the mutants (pipeline.reference.mutants) prove that the checks catch wrong *behaviour*,
these prove that the harness survives wrong *output*: every trial they play must end
``complete`` (the refusal went back to the model as a tool error), ``agent_error`` or ``limit``
with a closed error kind, never as a harness error and never retried. Each rewrites turn 1 of
the golden script; a ``{"raw": {...}}`` action is a reply message sent exactly as written.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

Script = dict[str, Any]
UNKNOWN_TOOL = "launch_rockets"
ENGLISH_REPLY = "Done. Let me know if you need anything else."


def _first_turn(script: Script) -> tuple[Script, list[dict[str, Any]]]:
    out = copy.deepcopy(script)
    return out, out["turns"][0]["actions"]


def _first_call(actions: list[dict[str, Any]]) -> dict[str, Any] | None:
    call: dict[str, Any] | None = next((a["call"] for a in actions if "call" in a), None)
    return call


def _raw_call(name: str, arguments: str, index: int = 0) -> dict[str, Any]:
    return {"raw": {"content": None, "finish_reason": "tool_calls", "tool_calls": [{
        "id": f"call_broken_{index}", "type": "function",
        "function": {"name": name, "arguments": arguments}}]}}


def no_call(script: Script) -> Script:
    """Says what it would do instead of calling the tool (turn 1 ends there)."""
    out, actions = _first_turn(script)
    call = _first_call(actions)
    if call is not None:
        actions[:] = [{"reply": f"Сейчас вызову {call['name']} и вернусь с результатом."}]
    return out


def json_text(script: Script) -> Script:
    """Writes the tool call as JSON in the reply text, with no ``tool_calls``."""
    out, actions = _first_turn(script)
    call = _first_call(actions)
    if call is not None:
        text = json.dumps({"name": call["name"], "arguments": call["arguments"]},
                          ensure_ascii=False)
        actions[:] = [{"raw": {"content": f"```json\n{text}\n```", "finish_reason": "stop"}}]
    return out


def unknown_tool(script: Script) -> Script:
    """Calls a tool the domain does not have, then goes on as golden."""
    out, actions = _first_turn(script)
    actions.insert(0, _raw_call(UNKNOWN_TOOL, "{}"))
    return out


def bad_json(script: Script) -> Script:
    """Sends arguments that are not JSON, then goes on as golden."""
    out, actions = _first_turn(script)
    call = _first_call(actions)
    if call is not None:
        actions.insert(0, _raw_call(call["name"], '{"capacity": 6, "starts_at": '))
    return out


def bad_schema(script: Script) -> Script:
    """Sends arguments that break the tool's JSON Schema, then goes on as golden."""
    out, actions = _first_turn(script)
    call = _first_call(actions)
    if call is not None:
        actions.insert(0, _raw_call(call["name"], json.dumps({"surprise": True})))
    return out


def empty(script: Script) -> Script:
    """Answers with neither text nor a tool call."""
    out, actions = _first_turn(script)
    actions.insert(0, {"raw": {"content": "", "finish_reason": "stop"}})
    return out


def truncated(script: Script) -> Script:
    """Runs out of tokens mid-reply (``finish_reason = length``)."""
    out, actions = _first_turn(script)
    actions.insert(0, {"raw": {"content": "Сейчас подберу подходящий вариант и", "finish_reason":
                               "length"}})
    return out


def loop(script: Script) -> Script:
    """Makes the same call over and over."""
    out, actions = _first_turn(script)
    call = _first_call(actions)
    if call is not None:
        actions[:0] = [{"call": copy.deepcopy(call)} for _ in range(3)]
    return out


def wrong_language(script: Script) -> Script:
    """Replies in English to a user who writes Russian, from turn 1 on."""
    out = copy.deepcopy(script)
    for turn in out["turns"]:
        turn["actions"][-1] = {"reply": ENGLISH_REPLY}
    return out


BROKEN: dict[str, Callable[[Script], Script]] = {
    "broken-no-call": no_call,
    "broken-json-text": json_text,
    "broken-unknown-tool": unknown_tool,
    "broken-bad-json": bad_json,
    "broken-bad-schema": bad_schema,
    "broken-empty": empty,
    "broken-truncated": truncated,
    "broken-loop": loop,
    "broken-wrong-language": wrong_language,
}
