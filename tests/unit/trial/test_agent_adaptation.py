"""The local models' agent adaptation: the empty reply is not written back, one nudge after a
tool result (a ``nudge`` event), the system note; and none of it for any other route."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from pipeline.catalog import load_domain
from pipeline.environment.sandbox import Sandbox
from pipeline.errors import AgentError
from pipeline.local.adapter import LOCAL_AGENT
from pipeline.models.client import ModelReply, ToolCallRequest
from pipeline.models.config import ModelConfig
from pipeline.models.routes import AgentAdaptation
from pipeline.trace import AssistantMessage, Nudge, Trace
from pipeline.trial.agent import Agent

SEARCH = ToolCallRequest("c1", "search_rooms", json.dumps({"attendees": 4}))


def _reply(content: str | None = None, calls: tuple[ToolCallRequest, ...] = ()) -> ModelReply:
    return ModelReply(content, calls, "tool_calls" if calls else "stop", None, None, None, None,
                      1.0)


@dataclass
class Scripted:
    replies: list[ModelReply]
    seen: list[list[dict[str, Any]]] = field(default_factory=list)

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 purpose: str = "planner", turn: int = 0,
                 response_schema: dict[str, Any] | None = None) -> ModelReply:
        self.seen.append([dict(m) for m in messages])
        return self.replies.pop(0)


def _agent(model: Scripted, adaptation: AgentAdaptation | None) -> Agent:
    domain = load_domain("meeting_rooms")
    return Agent(model, "system prompt", domain.openai_tools(), Sandbox(domain),
                 adaptation=adaptation)


def test_an_empty_reply_after_a_tool_result_is_nudged_once_and_not_written_back() -> None:
    model = Scripted([_reply(calls=(SEARCH,)), _reply(""), _reply("Нашёл две комнаты.")])
    trace = Trace()
    _agent(model, LOCAL_AGENT).run(["Найди комнату на четверых"], trace)
    kinds = [e.kind for e in trace.events]
    assert kinds == ["user_message", "assistant_message", "tool_call", "tool_result",
                     "assistant_message", "nudge", "assistant_message"]
    nudge = next(e for e in trace.events if isinstance(e, Nudge))
    assert nudge.content == LOCAL_AGENT.nudge and (nudge.turn, nudge.step) == (1, 1)
    retry = model.seen[2]
    assert retry[-1] == {"role": "system", "content": LOCAL_AGENT.nudge}
    assert retry[-2]["role"] == "tool"  # the empty reply was not put back in between
    assert [m["role"] for m in retry[:-1]] == [m["role"] for m in model.seen[1]]
    assert trace.events[-1].content == "Нашёл две комнаты."  # type: ignore[union-attr]


def test_a_second_empty_reply_still_ends_the_dialog_as_empty_response() -> None:
    model = Scripted([_reply(calls=(SEARCH,)), _reply(""), _reply(None)])
    trace = Trace()
    with pytest.raises(AgentError) as caught:
        _agent(model, LOCAL_AGENT).run(["Найди комнату"], trace)
    assert caught.value.kind == "empty_response"
    assert sum(isinstance(e, Nudge) for e in trace.events) == 1
    assert len(model.seen) == 3


def test_an_empty_first_reply_of_a_turn_is_not_nudged() -> None:
    model = Scripted([_reply("")])
    trace = Trace()
    with pytest.raises(AgentError, match="no text and no tool call"):
        _agent(model, LOCAL_AGENT).run(["Привет"], trace)
    assert not any(isinstance(e, Nudge) for e in trace.events)


def test_without_an_adaptation_the_dialog_is_as_the_model_wrote_it() -> None:
    model = Scripted([_reply(calls=(SEARCH,)), _reply("")])
    trace = Trace()
    with pytest.raises(AgentError) as caught:
        _agent(model, None).run(["Найди комнату"], trace)
    assert caught.value.kind == "empty_response"
    assert not any(isinstance(e, Nudge) for e in trace.events)
    assert all(m[0]["content"] == "system prompt" for m in model.seen)


def test_the_system_note_is_added_to_every_planner_call() -> None:
    model = Scripted([_reply(calls=(SEARCH,)), _reply("Готово.")])
    _agent(model, LOCAL_AGENT).run(["Найди комнату"], Trace())
    assert LOCAL_AGENT.system_note is not None
    assert all(m[0]["content"] == f"system prompt\n\n{LOCAL_AGENT.system_note}"
               for m in model.seen)


def test_only_the_local_route_carries_the_adaptation_and_local_agents_run_at_temperature_0(
) -> None:
    local = ModelConfig("local/default").resolved()
    assert local.route is not None and local.route.agent_adaptation is LOCAL_AGENT
    assert local.generation_params()["temperature"] == 0.0
    assert ModelConfig("local/default", temperature=0.7).resolved().temperature == 0.7
    for other in ("reference/golden", "openai/gpt-4o-mini"):
        route = ModelConfig(other).resolved().route
        assert route is not None and route.agent_adaptation is None


def test_the_empty_reply_stays_in_the_trace() -> None:
    model = Scripted([_reply(calls=(SEARCH,)), _reply(None), _reply("Есть.")])
    trace = Trace()
    _agent(model, LOCAL_AGENT).run(["Найди комнату"], trace)
    replies = [e for e in trace.events if isinstance(e, AssistantMessage)]
    assert [r.content for r in replies] == [None, None, "Есть."]
