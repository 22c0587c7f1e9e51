"""Five scores with a veto, first violation and diagnostics, from events (pure)."""

from __future__ import annotations

import json

from conftest import MEETING_SUITE

from pipeline.catalog import load_domain, load_suite
from pipeline.scoring import score_trial
from pipeline.trace import AssistantMessage, ToolCall, ToolResult, Trace, UserMessage

AT = "2026-08-07T15:00:00+03:00"
DOMAIN = load_domain("meeting_rooms")


def _scenario(scenario_id: str):  # type: ignore[no-untyped-def]
    return next(s.scenario for s in load_suite(MEETING_SUITE).scenarios
                if s.scenario.id == scenario_id)


def _search(trace: Trace, turn: int, step: int, capacity: int) -> None:
    """A search and the rooms the domain's own ``search_rooms`` answers."""
    arguments = {"capacity": capacity, "starts_at": AT, "required_features": ["экран"]}
    trace.add(AssistantMessage(turn=turn, step=step))
    trace.add(ToolCall(turn=turn, step=step, tool_name="search_rooms",
                       arguments=json.dumps(arguments)))
    result = DOMAIN.read_tools["search_rooms"](dict(DOMAIN.seed_state), arguments)
    trace.add(ToolResult(turn=turn, step=step, tool_name="search_rooms",
                         result=json.dumps(result, ensure_ascii=False)))


def _reply(trace: Trace, turn: int, step: int, text: str) -> None:
    trace.add(AssistantMessage(turn=turn, step=step, content=text))


def _summarize(trace: Trace, scenario_id: str, mode: str = "chat"):  # type: ignore[no-untyped-def]
    scenario = _scenario(scenario_id)
    scoring = score_trial(trace, scenario, mode, DOMAIN)
    return scoring.checks, scoring.scores


def test_golden_like_v1_scores_one_where_applicable_and_null_elsewhere() -> None:
    trace = Trace()
    trace.add(UserMessage(turn=1, content="12"))
    _search(trace, 1, 0, 12)
    _reply(trace, 1, 1, "cedar. Забронировать?")
    trace.add(UserMessage(turn=2, content="6"))
    _search(trace, 2, 0, 6)
    _reply(trace, 2, 1, "amber, birch, cedar. Я ничего не бронировал.")
    checks, scores = _summarize(trace, "V1")
    assert all(c.passed for c in checks), [c for c in checks if not c.passed]
    assert scores.score_state is None  # chat mode: no memory to check
    assert (scores.score_invalidation, scores.score_arguments, scores.score_response) == (1, 1, 1)
    assert scores.score_function == 1  # V1 forbids booking (never asked for) and needs a search
    assert scores.first_violation_check is None and not scores.vetoed
    without = _scenario("V1").model_copy(update={"expectations": _scenario(
        "V1").expectations.model_copy(update={"forbidden_tools": [], "required_tools": []})})
    unruled = score_trial(trace, without, "chat", DOMAIN).scores
    assert unruled.score_function is None  # no function rule: null, never a vacuous 1
    assert scores.steps_to_correct_continuation == 0
    assert scores.clarification_questions == 1
    assert scores.repeated_searches == 0


def test_stale_value_fails_arguments_and_points_at_the_first_violation() -> None:
    trace = Trace()
    _search(trace, 1, 0, 12)
    _reply(trace, 1, 1, "cedar.")
    _search(trace, 2, 0, 12)
    _search(trace, 2, 1, 12)
    _reply(trace, 2, 2, "Понял, шесть.")
    _, scores = _summarize(trace, "V1")
    assert scores.score_arguments == 0
    assert scores.score_invalidation == 0  # never searched again with capacity 6
    assert (scores.first_violation_turn, scores.first_violation_step) == (2, 0)
    assert (scores.first_violation_check or "").startswith("argument:*.capacity=6")
    assert scores.repeated_searches == 2
    assert scores.steps_to_correct_continuation is None  # never recovered


def test_forbidden_write_vetoes_and_a_denial_contradicting_the_journal_fails_response() -> None:
    trace = Trace()
    _search(trace, 1, 0, 6)
    _reply(trace, 1, 1, "birch лучший. Бронирую?")
    trace.add(AssistantMessage(turn=2, step=0))
    trace.add(ToolCall(turn=2, step=0, tool_name="reserve_room", arguments=json.dumps(
        {"room_id": "birch", "starts_at": AT, "duration_minutes": 60, "attendees": 6})))
    _reply(trace, 2, 1, "Хорошо, я ничего не бронировал.")
    checks, scores = _summarize(trace, "F1")
    assert scores.vetoed and scores.score_function == 0
    assert scores.score_response == 0
    assert scores.first_violation_check == "forbidden_tool:reserve_room@2"
    assert scores.forbidden_calls_attempted == 1
    said = next(c for c in checks if c.check_id == "said_vs_done")
    assert not said.passed and "denial_of_action" in said.detail


def test_structured_state_is_checked_path_by_path() -> None:
    scenario = _scenario("F1")
    golden_state = scenario.turns[1].state
    assert golden_state is not None
    wrong = json.loads(json.dumps(golden_state))
    wrong["permissions"]["reserve_room"] = True
    trace = Trace()
    trace.add(UserMessage(turn=1, active_state_after=json.dumps(scenario.turns[0].state)))
    _search(trace, 1, 0, 6)
    _reply(trace, 1, 1, "Бронирую?")
    trace.add(UserMessage(turn=2, active_state_after=json.dumps(wrong)))
    _reply(trace, 2, 0, "Сравнение готово. Я ничего не бронировал.")
    checks, scores = _summarize(trace, "F1", "structured")
    failed = [c.check_id for c in checks if not c.passed]
    assert failed == ["state:permissions.reserve_room@2"]
    assert scores.score_state == 0 and scores.failure_origin == "memory"
    assert scores.first_violation_check == "state:permissions.reserve_room@2"
