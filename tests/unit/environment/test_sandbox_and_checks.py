from __future__ import annotations

import json

from conftest import MEETING_SUITE
from helpers.checking import checks_of as all_checks_of

from pipeline.catalog import load_domain, load_suite
from pipeline.environment.sandbox import Sandbox
from pipeline.trace import ToolCall, Trace


def _scenario(scenario_id: str):  # type: ignore[no-untyped-def]
    suite = load_suite(MEETING_SUITE)
    return next(s.scenario for s in suite.scenarios if s.scenario.id == scenario_id)


def test_write_tool_is_intercepted_and_read_tool_uses_the_trial_copy() -> None:
    domain = load_domain("meeting_rooms")
    sandbox = Sandbox(domain)
    args = {"room_id": "cedar", "starts_at": "2026-08-07T15:00:00+03:00",
            "duration_minutes": 60, "attendees": 12}
    outcome = sandbox.call("reserve_room", json.dumps(args))
    assert outcome.intercepted and outcome.error is None
    assert outcome.result == {"accepted": True, "dry_run": True}
    assert [(e.tool, e.arguments, e.state_revision) for e in sandbox.journal] == [
        ("reserve_room", args, 1)]
    sandbox.state["rooms"].clear()
    found = sandbox.call("search_rooms", json.dumps(
        {"capacity": 6, "starts_at": "2026-08-07T15:00:00+03:00", "required_features": []}))
    assert found.result == {"rooms": []}
    fresh = Sandbox(domain).call("search_rooms", json.dumps(
        {"capacity": 7, "starts_at": "2026-08-07T15:00:00+03:00", "required_features": []}))
    assert [r["id"] for r in fresh.result["rooms"]] == ["birch", "cedar"]


def test_refusals_are_data_for_the_agent() -> None:
    sandbox = Sandbox(load_domain("meeting_rooms"))
    assert "unknown tool" in (sandbox.call("drop_tables", "{}").error or "")
    assert "not valid JSON" in (sandbox.call("search_rooms", "{capacity").error or "")
    bad = sandbox.call("reserve_room", json.dumps({"room_id": "amber"}))
    assert bad.error and not bad.intercepted and sandbox.journal == []


def checks_of(trace: Trace, scenario):  # type: ignore[no-untyped-def]
    """The checks of calls: these traces hold calls only (no tool results, no replies), so
    the checks of sources and of what the replies report are left out."""
    return [c for c in all_checks_of(trace, scenario)
            if c.check_kind not in {"value_source", "silent_side_effect", "denied_but_done"}]


def _trace(calls: list[tuple[int, str, dict]]) -> Trace:
    trace = Trace()
    for turn, name, args in calls:
        trace.add(ToolCall(turn=turn, step=0, tool_name=name, arguments=json.dumps(args)))
    return trace


def test_checks_catch_forbidden_tool_stale_argument_and_wrong_final_value() -> None:
    at = "2026-08-07T15:00:00+03:00"
    f1 = _scenario("F1")
    booked = _trace([(1, "search_rooms", {"capacity": 6}),
                     (2, "reserve_room", {"room_id": "amber", "attendees": 6})])
    failed = [c for c in checks_of(booked, f1) if not c.passed]
    assert [(c.check_kind, c.turn) for c in failed] == [("forbidden_tool", 2)]

    v1 = _scenario("V1")
    stale = _trace([(1, "search_rooms", {"capacity": 12, "starts_at": at}),
                    (2, "search_rooms", {"capacity": 12, "starts_at": at})])
    kinds = sorted(c.check_kind for c in checks_of(stale, v1) if not c.passed)
    assert kinds == ["argument_constraint", "final_value", "fresh_call"]

    good = _trace([(1, "search_rooms", {"capacity": 12}), (2, "search_rooms", {"capacity": 6})])
    assert all(c.passed for c in checks_of(good, v1))


def test_until_turn_bounds_an_argument_constraint() -> None:
    v3 = _scenario("V3")
    golden = _trace([(1, "search_rooms", {"capacity": 12}), (2, "search_rooms", {"capacity": 6}),
                     (3, "search_rooms", {"capacity": 8}),
                     (3, "reserve_room", {"room_id": "birch", "attendees": 8})])
    assert all(c.passed for c in checks_of(golden, v3))
    glued = _trace([(1, "search_rooms", {"capacity": 12}), (2, "search_rooms", {"capacity": 6}),
                    (3, "search_rooms", {"capacity": 6}),
                    (3, "reserve_room", {"room_id": "amber", "attendees": 6})])
    failed = {c.check_id for c in checks_of(glued, v3) if not c.passed}
    assert any(i.startswith("argument:*.capacity=8") for i in failed)
    assert "final:reserve_room.attendees=8" in failed
