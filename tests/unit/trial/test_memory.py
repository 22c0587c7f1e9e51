"""Memory modes of the built-in agent: summary, structured two-phase update, the gate."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from pipeline.catalog import load_domain
from pipeline.environment.sandbox import Sandbox
from pipeline.errors import AgentError
from pipeline.models.client import ModelReply, ToolCallRequest
from pipeline.trace import BLOCKED, MemoryUpdate, ToolCall, Trace
from pipeline.trial.agent import Agent
from pipeline.trial.memory import StructuredMemory, SummaryMemory

AT = "2026-08-07T15:00:00+03:00"
RESERVE = ToolCallRequest("c1", "reserve_room", json.dumps(
    {"room_id": "amber", "starts_at": AT, "duration_minutes": 60, "attendees": 6}))


def _state(reserve: bool, goal: str = "reserve_room") -> dict[str, Any]:
    return {"revision": 1, "goal": goal, "status": "active",
            "constraints": {"attendees": 6, "starts_at": AT, "required_features": ["экран"],
                            "sort_by": None, "limit": None},
            "permissions": {"search_rooms": True, "reserve_room": reserve}, "superseded": []}


def _reply(content: str | None = None, calls: tuple[ToolCallRequest, ...] = ()) -> ModelReply:
    return ModelReply(content, calls, "tool_calls" if calls else "stop", None, None, None, None,
                      1.0)


@dataclass
class Scripted:
    """A scripted model: memory calls get ``memory``; planner calls pop ``planner`` in order."""

    memory: list[str]
    planner: list[ModelReply]
    seen: list[tuple[str, list[dict[str, Any]]]] = field(default_factory=list)
    on_planner: Any = None
    schemas: list[dict[str, Any] | None] = field(default_factory=list)

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 purpose: str = "planner", turn: int = 0,
                 response_schema: dict[str, Any] | None = None) -> ModelReply:
        self.seen.append((purpose, messages))
        self.schemas.append(response_schema)
        if purpose != "planner":
            return _reply(self.memory.pop(0))
        if self.on_planner is not None:
            self.on_planner()
        return self.planner.pop(0)


def _agent(model: Scripted, memory: Any) -> Agent:
    domain = load_domain("meeting_rooms")
    return Agent(model, "system prompt", domain.openai_tools(), Sandbox(domain), memory=memory)


def test_structured_state_is_committed_before_the_planner_and_shown_to_it() -> None:
    model = Scripted([json.dumps(_state(True))], [_reply(calls=(RESERVE,)), _reply("Готово.")])
    agent = _agent(model, StructuredMemory(load_domain("meeting_rooms")))
    trace = Trace()
    agent.run(["Забронируй amber"], trace)
    assert [p for p, _ in model.seen] == ["state", "planner", "planner"]
    assert '"reserve_room": true' in model.seen[1][1][0]["content"]
    user = trace.events[0]
    assert user.active_state_before is None
    assert json.loads(user.active_state_after or "")["revision"] == 1
    assert [e.kind for e in trace.events][:2] == ["user_message", "memory_update"]
    assert [j.tool for j in agent.sandbox.journal] == ["reserve_room"]


def test_a_call_planned_under_an_older_revision_is_dropped_and_replanned() -> None:
    memory = StructuredMemory(load_domain("meeting_rooms"))
    model = Scripted([json.dumps(_state(True))], [_reply(calls=(RESERVE,)), _reply("Жду.")])

    def concurrent_commit() -> None:  # the state moves on while the action is being planned
        if len(model.planner) == 2:
            memory.revision += 1

    model.on_planner = concurrent_commit
    agent = _agent(model, memory)
    trace = Trace()
    agent.run(["Забронируй amber"], trace)
    assert agent.sandbox.journal == []
    call = next(e for e in trace.events if isinstance(e, ToolCall))
    assert (call.tool_error or "").startswith(BLOCKED + "stale") and call.blocked
    assert call.intercepted is False
    assert [p for p, _ in model.seen] == ["state", "planner", "planner"]  # re-planned


def test_a_call_the_state_does_not_permit_never_reaches_the_sandbox() -> None:
    model = Scripted([json.dumps(_state(False, goal="search_rooms"))],
                     [_reply(calls=(RESERVE,)), _reply("Не бронирую.")])
    agent = _agent(model, StructuredMemory(load_domain("meeting_rooms")))
    trace = Trace()
    agent.run(["Пока не бронируй"], trace)
    assert agent.sandbox.journal == []
    call = next(e for e in trace.events if isinstance(e, ToolCall))
    assert "permissions.reserve_room is False" in (call.tool_error or "") and call.blocked


@pytest.mark.parametrize(("state", "message"), [
    ("not json", "not JSON"),
    (json.dumps({**_state(True), "goal": "launch"}), "goal"),
    (json.dumps(_state(True, goal="compare_rooms")), "invariant"),
])
def test_an_invalid_state_update_is_a_memory_error(state: str, message: str) -> None:
    model = Scripted([state, state], [_reply("never reached")])
    agent = _agent(model, StructuredMemory(load_domain("meeting_rooms")))
    trace = Trace()
    with pytest.raises(AgentError) as caught:
        agent.run(["Сравни два варианта"], trace)
    assert caught.value.kind == "invalid_memory" and caught.value.turn == 1
    assert message in str(caught.value)
    assert [p for p, _ in model.seen] == ["state", "state"]  # one repair; the planner never ran
    assert message in model.seen[1][1][-1]["content"]  # the repair request says why
    updates = [e for e in trace.events if isinstance(e, MemoryUpdate)]
    assert [e.rejected is not None for e in updates] == [True, True]
    assert [e.row()["tool_error"].startswith("rejected: ") for e in updates] == [True, True]
    assert trace.usage.model_calls == 2


def test_a_rejected_state_is_repaired_once_then_committed() -> None:
    good = json.dumps(_state(True))
    model = Scripted(["not json", good], [_reply(calls=(RESERVE,)), _reply("Готово.")])
    agent = _agent(model, StructuredMemory(load_domain("meeting_rooms")))
    trace = Trace()
    agent.run(["Забронируй amber"], trace)
    assert [p for p, _ in model.seen] == ["state", "state", "planner", "planner"]
    updates = [e for e in trace.events if isinstance(e, MemoryUpdate)]
    assert updates[0].rejected is not None and updates[0].content == "not json"
    assert updates[1].rejected is None and json.loads(updates[1].content or "")["revision"] == 1
    assert [j.tool for j in agent.sandbox.journal] == ["reserve_room"]


def test_the_state_update_asks_for_every_declared_field() -> None:
    model = Scripted([json.dumps(_state(True))], [_reply("Готово.")])
    agent = _agent(model, StructuredMemory(load_domain("meeting_rooms")))
    agent.run(["Забронируй amber"], Trace())
    wanted = model.schemas[0]
    assert wanted is not None and "$schema" not in wanted
    assert set(wanted["required"]) == set(wanted["properties"])
    constraints = wanted["properties"]["constraints"]
    assert set(constraints["required"]) == set(constraints["properties"]) >= {"room_id"}
    assert model.schemas[1] is None  # the planner is not constrained


def test_summary_is_rewritten_each_turn_and_given_to_the_planner() -> None:
    model = Scripted(["Найти комнату на 12.", "Найти комнату на 6. Ничего не бронировать."],
                     [_reply("Ищу."), _reply("Понял.")])
    agent = _agent(model, SummaryMemory())
    trace = Trace()
    agent.run(["Комната на 12", "Нас шесть, не бронируй"], trace)
    users = [e for e in trace.events if e.kind == "user_message"]
    assert [(u.active_state_before, u.active_state_after) for u in users] == [
        (None, "Найти комнату на 12."),
        ("Найти комнату на 12.", "Найти комнату на 6. Ничего не бронировать.")]
    planner_system = model.seen[-1][1][0]["content"]
    assert "Ничего не бронировать" in planner_system
    summary_request = model.seen[2][1][1]["content"]
    assert "Найти комнату на 12." in summary_request  # previous summary is the input
