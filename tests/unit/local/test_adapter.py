"""The local model's tool-call adapter: JSON written as text becomes a tool call, nothing else."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pipeline.local.adapter import LIFTED_ID_PREFIX, lift_tool_calls

TOOLS = {"search_rooms", "reserve_room"}
CALL = {"name": "search_rooms", "arguments": {"capacity": 6, "required_features": ["экран"]}}


def _lifted(content: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    assert lift_tool_calls(message, TOOLS)
    return message


@pytest.mark.parametrize("text", [
    json.dumps(CALL, ensure_ascii=False),
    "```json\n" + json.dumps(CALL, ensure_ascii=False, indent=2) + "\n```",
    "<tool_call>\n" + json.dumps(CALL, ensure_ascii=False) + "\n</tool_call>",
    "{" + json.dumps(CALL, ensure_ascii=False) + "}",  # doubled braces, copied from a template
    json.dumps({"type": "function", "function": CALL}, ensure_ascii=False),
    json.dumps({"name": "search_rooms", "arguments": json.dumps(CALL["arguments"])}),
    json.dumps({"name": "search_rooms", "parameters": CALL["arguments"]}),
])
def test_a_call_written_as_text_becomes_a_tool_call(text: str) -> None:
    message = _lifted(text)
    (call,) = message["tool_calls"]
    assert call["function"]["name"] == "search_rooms"
    assert json.loads(call["function"]["arguments"]) == CALL["arguments"]
    assert call["id"].startswith(LIFTED_ID_PREFIX)
    assert message["content"] is None


def test_text_before_the_call_stays_and_several_calls_are_kept_in_order() -> None:
    reserve = {"name": "reserve_room", "arguments": {"room_id": "amber"}}
    message = _lifted(f"Ищу комнаты.\n{json.dumps(CALL)}\n{json.dumps(reserve)}")
    assert message["content"] == "Ищу комнаты."
    assert [c["function"]["name"] for c in message["tool_calls"]] == ["search_rooms",
                                                                       "reserve_room"]
    assert len({c["id"] for c in message["tool_calls"]}) == 2


@pytest.mark.parametrize("text", [
    "Свободны amber и birch.",
    json.dumps({"name": "launch_rockets", "arguments": {}}),  # not one of the request's tools
    json.dumps({"name": "search_rooms", "arguments": "not json"}),
    json.dumps({"rooms": ["amber"]}),
    '{"name": "search_rooms", "arguments": {"capacity": 6',  # cut off
])
def test_anything_else_stays_text(text: str) -> None:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    assert not lift_tool_calls(message, TOOLS)
    assert message == {"role": "assistant", "content": text}


def test_a_message_with_real_tool_calls_is_left_alone() -> None:
    calls = [{"id": "c1", "type": "function", "function": {"name": "search_rooms",
                                                            "arguments": "{}"}}]
    message = {"role": "assistant", "content": json.dumps(CALL), "tool_calls": calls}
    assert not lift_tool_calls(message, TOOLS)
    assert message["tool_calls"] is calls
