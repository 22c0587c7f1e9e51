"""The update / confirm / create trajectory (the whole-dialog method) and the guest-pass domain it
guards."""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers.checking import checks_of

from pipeline.catalog import CallAction, LoadedScenario, catalogs_root, load_domain, load_suite
from pipeline.catalog.models import ReplyAction, TrajectoryRule
from pipeline.environment.sandbox import Sandbox
from pipeline.scoring import Call, Journal
from pipeline.scoring.trajectory import (
    VIOLATION_CODES,
    TrajectoryResult,
    evaluate_trajectory,
    trajectory_check,
)
from pipeline.trace import AssistantMessage, ToolCall, Trace, UserMessage

UPDATE, CONFIRM, CREATE = "update_pass_request", "confirm_pass_request", "create_pass"
RULE = TrajectoryRule(update_tool=UPDATE, confirm_tool=CONFIRM, create_tool=CREATE,
                      expected={"date": "2026-11-04"})


def update(turn: int, step: int, date: str) -> Call:
    return Call(turn, step, UPDATE, {"date": date})


def confirm(turn: int, step: int) -> Call:
    return Call(turn, step, CONFIRM, {})


def create(turn: int, step: int, **values: Any) -> Call:
    return Call(turn, step, CREATE, values)


# The seed's positive trace, one event per call: date 3 Nov, corrected to 4 Nov, confirm, create.
TRACE = [update(1, 0, "2026-11-03"), update(2, 0, "2026-11-04"), confirm(3, 0),
         create(3, 1, date="2026-11-04")]


def test_seed_positive_trace_passes() -> None:
    result = evaluate_trajectory(RULE, TRACE)
    assert result == TrajectoryResult(None, {"date": "2026-11-04"})
    assert result.passed


# The seed's five negative traces: (name, calls, first-violation code, turn, step).
NEGATIVES = [
    ("early_create", [create(1, 0), update(1, 1, "2026-11-03"), *TRACE[1:]],
     "create_before_confirm", 1, 0),
    ("old_date", [*TRACE[:-1], create(3, 1, date="2026-11-03")], "create_values_differ", 3, 1),
    ("no_create", TRACE[:-1], "no_create", None, None),
    ("repeated_create", [*TRACE, create(3, 2, date="2026-11-04")], "event_after_create", 3, 2),
    ("change_after_create", [*TRACE, update(4, 0, "2026-11-05")], "event_after_create", 4, 0),
]


@pytest.mark.parametrize(("calls", "code", "turn", "step"),
                         [n[1:] for n in NEGATIVES], ids=[n[0] for n in NEGATIVES])
def test_seed_negative_traces_fail_at_first_violation(
        calls: list[Call], code: str, turn: int | None, step: int | None) -> None:
    violation = evaluate_trajectory(RULE, calls).violation
    assert violation is not None
    assert (violation.code, violation.turn, violation.step) == (code, turn, step)
    assert violation.detail


def test_update_after_confirm_voids_the_confirmation() -> None:
    calls = [*TRACE[:3], update(3, 1, "2026-11-04"), create(3, 2, date="2026-11-04")]
    violation = evaluate_trajectory(RULE, calls).violation
    assert violation is not None
    assert (violation.code, violation.turn, violation.step) == ("create_before_confirm", 3, 2)
    assert "since the last confirm_pass_request" in violation.detail


def test_confirmed_but_unexpected_values() -> None:
    calls = [update(1, 0, "2026-11-03"), confirm(2, 0), create(2, 1, date="2026-11-03")]
    result = evaluate_trajectory(RULE, calls)
    assert result.violation is not None
    assert (result.violation.code, result.violation.turn) == ("expected_values_differ", 2)
    assert result.created == {"date": "2026-11-03"}
    assert '"2026-11-04"' in result.violation.detail


def test_created_values_must_equal_all_confirmed_values() -> None:
    calls = [Call(1, 0, UPDATE, {"date": "2026-11-04", "host": "Ольга Соколова"}),
             confirm(2, 0), create(2, 1, date="2026-11-04")]
    violation = evaluate_trajectory(RULE, calls).violation
    assert violation is not None and violation.code == "create_values_differ"
    assert "host=- (want \"Ольга Соколова\")" in violation.detail


def test_other_tools_are_ignored_and_bad_arguments_count() -> None:
    noise = Call(2, 1, "get_pass_rules", {})
    assert evaluate_trajectory(RULE, [*TRACE[:2], noise, *TRACE[2:]]).passed
    garbled = [*TRACE[:-1], Call(3, 1, CREATE, None)]
    violation = evaluate_trajectory(RULE, garbled).violation
    assert violation is not None and violation.code == "create_values_differ"


def test_check_adapter() -> None:
    passed = trajectory_check(RULE, TRACE)
    assert (passed.check_id, passed.check_kind, passed.passed) == (
        "trajectory:create_pass", "trajectory", True)
    assert (passed.turn, passed.step) == (None, None)
    failed = trajectory_check(RULE, NEGATIVES[1][1])
    assert (failed.passed, failed.turn, failed.step) == (False, 3, 1)
    assert failed.detail.startswith("create_values_differ: ")
    assert set(VIOLATION_CODES) == {n[2] for n in NEGATIVES} | {"expected_values_differ"}


# The guest-pass domain: every scenario's golden calls replay cleanly and pass every check.

SUITE = load_suite(catalogs_root() / "guest_pass" / "suites" / "guest_pass.jsonl")


def replay(loaded: LoadedScenario) -> Trace:
    """Play the golden calls through a fresh sandbox, recording them and the golden replies as
    the agent loop does: turns from 1, step = index of the golden action in its turn (one
    model call each)."""
    domain = load_domain("guest_pass")
    sandbox = Sandbox(domain)
    trace = Trace()
    for turn, golden in enumerate(loaded.scenario.turns, start=1):
        trace.add(UserMessage(turn=turn, content=golden.user))
        for step, action in enumerate(golden.golden):
            if isinstance(action, ReplyAction):
                trace.add(AssistantMessage(turn=turn, step=step, content=action.reply))
            if not isinstance(action, CallAction):
                continue
            outcome = sandbox.call(action.call.name, json.dumps(action.call.arguments))
            spec = domain.tool(action.call.name)
            assert spec is not None
            assert outcome.error is None, outcome.error
            assert outcome.intercepted == (spec.kind == "write")
            if spec.kind == "write":
                assert outcome.result == spec.intercept_response
            trace.add(ToolCall(turn=turn, step=step, tool_name=action.call.name,
                      arguments=json.dumps(action.call.arguments, ensure_ascii=False),
                      intercepted=outcome.intercepted, tool_error=outcome.error))
    writes = [t.name for t in domain.tools if t.kind == "write"]
    assert [e.tool for e in sandbox.journal] == [e.tool_name for e in trace.tool_calls()
                                                 if e.tool_name in writes]
    return trace


def test_suite_has_revision_and_control_scenarios() -> None:
    classes = {s.scenario.scenario_class for s in SUITE.scenarios}
    assert {"revision", "control"} <= classes
    assert len(SUITE.scenarios) >= 3


@pytest.mark.parametrize("loaded", SUITE.scenarios, ids=[s.scenario.id for s in SUITE.scenarios])
def test_golden_replay_passes_every_check(loaded: LoadedScenario) -> None:
    trace = replay(loaded)
    rule = loaded.scenario.expectations.trajectory
    assert rule is not None
    calls = Journal.of(trace.events).calls
    failed = [c for c in [*checks_of(trace, loaded.scenario), trajectory_check(rule, calls)]
              if not c.passed]
    assert failed == []


def test_rules_tool_reads_the_seed_state() -> None:
    outcome = Sandbox(load_domain("guest_pass")).call("get_pass_rules", "{}")
    assert outcome.error is None and not outcome.intercepted
    assert outcome.result["rules"]["max_days_ahead"] == 30
    assert outcome.result["rules"]["host_must_be_employee"] is True
