"""The local model's tool-call adapter: a JSON object in the reply text becomes a tool call.

Small instruct models asked for a tool call often write it as text: a JSON object
``{"name": ..., "arguments": {...}}``, bare, in a code fence or between ``<tool_call>`` tags,
rarely as ``tool_calls`` through the model's own template (docs/providers.md). The adapter,
run by the local server on every chat completion that offered tools, turns each such object
that names one of the request's tools into a proper ``tool_calls`` entry; the text before
the first object stays as content; ``finish_reason`` becomes ``tool_calls``.

This leniency changes what counts as "the agent called a tool", so it is explicit: the
server names it in ``system_fingerprint`` (recorded on every trial row), and every lifted
call's id starts with ``LIFTED_ID_PREFIX`` (visible in ``events.tool_call_id``). It is a
property of the local model's serving, never applied to any other provider.

``LOCAL_AGENT`` is the other half: how the built-in agent talks to a local model (a system
line against invented ids, one nudge after an empty reply), carried by the local route and
named in the same fingerprint.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection, Iterator
from typing import Any

from pipeline.models.routes import AgentAdaptation

ADAPTER_ID = "json-text-tool-calls/1"
LIFTED_ID_PREFIX = "call_text_"
LOCAL_AGENT = AgentAdaptation(
    name="local-agent/1",
    system_note=("Use only ids, names and values that the user gave or a tool returned; "
                 "never invent an id. After a tool result, reply to the user in plain text "
                 "unless another tool call is needed."),
    nudge="Now reply to the user in plain text.",
)
"""The built-in agent's adaptation to the bundled local models (``pipeline.local.route``).
Measured on the 1.5B: after a tool result it often emits only an end-of-turn token; one
trailing instruction turned 0 of 4 such replies into 4 of 4 text replies. Named in the
server's ``system_fingerprint`` beside ``ADAPTER_ID``."""
_TAGS = re.compile(r"</?tool_calls?>|</?tools>|```(?:json)?", re.IGNORECASE)
_DECODER = json.JSONDecoder()


def lift_tool_calls(message: dict[str, Any], tool_names: Collection[str]) -> bool:
    """Rewrite ``message`` (an assistant message dict) in place; True if calls were lifted."""
    content = message.get("content")
    if message.get("tool_calls") or not isinstance(content, str) or not tool_names:
        return False
    text = _TAGS.sub(" ", content)
    calls, first_start = [], None
    for start, value in _json_objects(text):
        call = _as_call(value, tool_names)
        if call is None:
            continue
        first_start = start if first_start is None else first_start
        calls.append(call)
    if not calls or first_start is None:
        return False
    before = text[:first_start].strip()
    message["content"] = before or None
    stamp = hashlib.sha256(content.encode("utf-8")).hexdigest()[:8]
    message["tool_calls"] = [
        {"id": f"{LIFTED_ID_PREFIX}{stamp}_{index}", "type": "function",
         "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}}
        for index, (name, arguments) in enumerate(calls)
    ]
    return True


def _json_objects(text: str) -> Iterator[tuple[int, Any]]:
    """Top-level JSON objects in ``text`` with their start offsets; ``{{...}}`` (a doubled
    brace copied from a template) is read as one object."""
    position = 0
    while (start := text.find("{", position)) != -1:
        parsed = _decode_at(text, start)
        if parsed is None:
            position = start + 1
            continue
        value, end = parsed
        yield start, value
        position = end


def _decode_at(text: str, start: int) -> tuple[Any, int] | None:
    try:
        return _DECODER.raw_decode(text, start)
    except json.JSONDecodeError:
        pass
    if text.startswith("{{", start):
        try:
            value, end = _DECODER.raw_decode(text, start + 1)
        except json.JSONDecodeError:
            return None
        return value, end + 1 if text.startswith("}", end) else end
    return None


def _as_call(value: Any, tool_names: Collection[str]) -> tuple[str, dict[str, Any]] | None:
    """``{"name", "arguments"}`` (or ``"parameters"``), also wrapped OpenAI-style as
    ``{"type": "function", "function": {...}}``."""
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict) and "name" not in value:
        value = value["function"]
    name = value.get("name")
    arguments = value.get("arguments", value.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            return None
    if not isinstance(name, str) or name not in tool_names or not isinstance(arguments, dict):
        return None
    return name, arguments
