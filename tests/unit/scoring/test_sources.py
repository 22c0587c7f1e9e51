"""Values need a source: on the committed real traces, the ids the local model invented are
found at the call, and become the first violation when they are the earliest."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import MEETING_SUITE
from helpers.checking import checks_of
from helpers.real_traces import REPO, check, rescored

from pipeline.catalog import CatalogError, load_domain, load_suite
from pipeline.scoring import Journal
from pipeline.scoring.sources import normalised, value_source_checks
from pipeline.trace import AssistantMessage, ToolCall, ToolResult, Trace, UserMessage


@pytest.mark.parametrize(("trial", "scenario", "invented", "before"), [
    ("053796cdd6", "F3", "reserve_room.room_id='room-001'", "reply_language@1"),
    ("191ff1c756", "C1", "reserve_room.room_id='room1'", "reply_language@1"),
    ("2dbc4f303a", "F3", "reserve_room.room_id='123'", "clarification:required@2"),
])
def test_a_room_booked_before_any_search_is_the_first_violation_at_the_call(
        trial: str, scenario: str, invented: str, before: str) -> None:
    done = rescored(trial)
    assert done.trial.row["scenario_id"] == scenario
    assert done.trial.row["first_violation_check"] == before  # as the run recorded it
    source = check(done, "value_source")
    assert not source.passed and (source.turn, source.step) == (1, 0)
    assert source.detail.startswith(invented) and source.score == "arguments"
    scores = done.scores
    assert (scores.first_violation_check, scores.first_violation_turn,
            scores.first_violation_step) == ("value_source", 1, 0)


@pytest.mark.parametrize(("trial", "turn", "step", "invented"), [
    ("1b802183f3", 1, 1, "reserve_room.room_id='room123'"),  # after a search that found amber
    ("7d555457f9", 1, 1, "reserve_room.room_id='r101'"),
    ("437982afbf", 1, 0, "reserve_room.room_id='room 2'"),  # in the step of the search
    ("0ab7781926", 2, 0, "reserve_room.room_id='room_id_of_the_cheapest_room'"),
    ("b73fa42917", 1, 2, "send_email.to='example@example.com'"),
    ("eea28f98f2", 1, 1, "send_email.to='organizer@example.com'"),
])
def test_invented_rooms_and_recipients_are_found_at_their_call(trial: str, turn: int,
                                                                step: int, invented: str) -> None:
    source = check(rescored(trial), "value_source")
    assert not source.passed and (source.turn, source.step) == (turn, step)
    assert source.detail.startswith(invented)


@pytest.mark.parametrize("trial", ["b620ec44cf", "3399536ed0", "8ca76dbfe0",  # amber, birch,
                                   "6506d5f726", "aa48fff952", "7dc61beddb"])  # cedar; o1, o3
def test_ids_a_search_returned_or_the_user_wrote_have_a_source(trial: str) -> None:
    assert check(rescored(trial), "value_source").passed


@pytest.mark.slow  # over a second (the fast tier stays under a minute)
def test_the_trials_that_passed_still_pass() -> None:
    for trial in ("2f7b831552", "6506d5f726", "829df220ac", "aa48fff952", "abf4f7e9a8",
                  "d04577aa9b"):
        done = rescored(trial)
        assert done.trial.row["passed"] and done.passed, trial


def test_a_domain_that_checks_nothing_has_no_source_check() -> None:
    assert not value_source_checks(Journal.of([]), load_domain("guest_pass"))


def _tau2_trace(order_id: str, payment: str, reply: str) -> Trace:
    trace = Trace()
    trace.add(UserMessage(turn=1, content="Hi, I'm yusuf_rossi_9620. Cancel order #W2378156, "
                          "I ordered it by mistake."))
    trace.add(AssistantMessage(turn=1, step=0))
    trace.add(ToolCall(turn=1, step=0, tool_name="get_order_details",
                       arguments=json.dumps({"order_id": "#W2378156"})))
    trace.add(ToolResult(turn=1, step=0, tool_name="get_order_details", result=json.dumps(
        {"order_id": "#W2378156", "payment_history": [{"payment_method_id":
                                                        "credit_card_9513926"}]})))
    trace.add(AssistantMessage(turn=1, step=1))
    trace.add(ToolCall(turn=1, step=1, tool_name="modify_pending_order_payment",
                       arguments=json.dumps({"order_id": order_id, "payment_method_id": payment})))
    trace.add(AssistantMessage(turn=1, step=2, content=reply))
    return trace


def test_tau2_ids_invented_from_the_tool_descriptions_have_no_source() -> None:
    domain = load_domain("tau2_retail")
    good = Journal.of(_tau2_trace("#W2378156", "credit_card_9513926",
                                  "Done: order #W2378156 is paid by credit_card_9513926.").events)
    assert all(c.passed for c in value_source_checks(good, domain))
    bad = Journal.of(_tau2_trace("#w2378156", "credit_card_0000000",
                                 "Order #W0000000 is updated.").events)
    by_id = {c.check_id: c for c in value_source_checks(bad, domain)}
    call = by_id["value_source"]  # the order id differs in case only: it has a source
    assert not call.passed and (call.turn, call.step) == (1, 1)
    assert call.detail.startswith("modify_pending_order_payment.payment_method_id="
                                  "'credit_card_0000000'")
    reply = by_id["value_source:reply"]
    assert not reply.passed and (reply.turn, reply.step, reply.score) == (1, 2, "response")
    assert "#w0000000" in reply.detail


@pytest.mark.parametrize(("text", "value"), [
    ("Стоимость  1 800 руб.", "1800"), ("price 1,800.00", "1800"), ("ровно 2,50", "2.5"),
    ("Room\tAMBER", "room amber"),
])
def test_values_are_compared_after_normalisation(text: str, value: str) -> None:
    assert value in normalised(text)


def test_every_meeting_rooms_golden_has_its_sources() -> None:
    """The goldens invent nothing: replayed with the search results, no source is missing."""
    from pipeline.environment.sandbox import Sandbox

    domain = load_domain("meeting_rooms")
    for loaded in load_suite(MEETING_SUITE).scenarios:
        sandbox, trace = Sandbox(domain), Trace()
        for turn, spec in enumerate(loaded.scenario.turns, start=1):
            trace.add(UserMessage(turn=turn, content=spec.user))
            for step, action in enumerate(spec.golden):
                call = getattr(action, "call", None)
                if call is None:
                    trace.add(AssistantMessage(turn=turn, step=step, content=action.reply))
                    continue
                arguments = json.dumps(call.arguments, ensure_ascii=False)
                outcome = sandbox.call(call.name, arguments)
                trace.add(ToolCall(turn=turn, step=step, tool_name=call.name,
                                   arguments=arguments))
                trace.add(ToolResult(turn=turn, step=step, tool_name=call.name,
                                     result=json.dumps(outcome.result, ensure_ascii=False)))
        failed = [c for c in checks_of(trace, loaded.scenario) if not c.passed
                  and c.check_kind in {"value_source", "silent_side_effect", "denied_but_done"}]
        assert failed == [], loaded.scenario.id


def _domain_with(tmp_path: Path, edit: str, to: str) -> Path:
    folder = tmp_path / "rooms_copy"
    shutil.copytree(REPO / "catalogs" / "meeting_rooms", folder)
    tools = folder / "tools.json"
    text = tools.read_text("utf-8")
    assert edit in text
    tools.write_text(text.replace(edit, to, 1), "utf-8")
    return folder


def test_argument_sources_naming_an_unknown_argument_is_a_located_error(tmp_path: Path) -> None:
    folder = _domain_with(tmp_path, '"room_id": "checked"', '"room": "checked"')
    with pytest.raises(CatalogError) as caught:
        load_domain("rooms_copy", folder)
    text = str(caught.value)
    assert "tools.json:" in text and "argument_sources" in text and "'room'" in text
    assert ":26:" in text or "line 26" in text  # the line of reserve_room's argument_sources


def test_a_read_tool_declares_no_sources_and_a_kind_is_closed(tmp_path: Path) -> None:
    folder = _domain_with(tmp_path, '"kind": "read",\n',
                          '"kind": "read",\n      "argument_sources": {"capacity": "free"},\n')
    with pytest.raises(CatalogError, match="only a write tool declares argument_sources"):
        load_domain("rooms_copy", folder)
    folder = _domain_with(tmp_path / "2", '"room_id": "checked"', '"room_id": "maybe"')
    with pytest.raises(CatalogError, match="argument_sources"):
        load_domain("rooms_copy", folder)


def test_a_refusal_that_echoes_an_invented_id_is_no_source() -> None:
    domain = load_domain("orders")
    events = [UserMessage(turn=1, content="Cancel my last order."),
              ToolCall(turn=1, step=0, tool_name="get_order", arguments='{"order_id": "o9"}'),
              ToolResult(turn=1, step=0, tool_name="get_order",
                         result='{"error": "no order o9"}'),
              ToolCall(turn=1, step=1, tool_name="cancel_order", arguments='{"order_id": "o9"}')]
    (source,) = value_source_checks(Journal.of(events), domain)
    assert not source.passed and (source.turn, source.step) == (1, 1)
    found = [*events[:2], ToolResult(turn=1, step=0, tool_name="get_order",
                                     result='{"id": "o9", "status": "pending"}'), events[3]]
    assert value_source_checks(Journal.of(found), domain)[0].passed
