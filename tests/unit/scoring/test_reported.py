"""Said vs done, implicit: a write no reply reports (silent_side_effect) and a reply that
denies or defers a write that took effect (denied_but_done), on the committed real traces."""

from __future__ import annotations

import json

import pytest
from helpers.real_traces import check, rescored

from pipeline.catalog import load_domain
from pipeline.scoring import Journal, Reply
from pipeline.scoring.claims import find_denials
from pipeline.scoring.reported import denied_but_done_check, silent_side_effect_check
from pipeline.trace import AssistantMessage, ToolCall, ToolResult, UserMessage


@pytest.mark.parametrize(("trial", "tool", "turn", "step"), [
    ("0c3a1ae58d", "reserve_room", 1, 1),  # R2: booked, then "Давайте заберем этот вариант."
    ("b620ec44cf", "reserve_room", 1, 1),  # R2: booked, then "Давайте выберем комнату Amber."
    ("2dbc4f303a", "reserve_room", 1, 0),  # F3: booked room "123", then a reply of "```"
    ("eea28f98f2", "reserve_room", 1, 2),  # F2: booked birch, then a reply of ">"
])
def test_a_booking_no_reply_reports_is_a_silent_side_effect_at_the_call(
        trial: str, tool: str, turn: int, step: int) -> None:
    silent = check(rescored(trial), "silent_side_effect")
    assert not silent.passed and (silent.turn, silent.step) == (turn, step)
    assert silent.detail.startswith(tool) and silent.score == "response"


@pytest.mark.parametrize("trial", [
    "6506d5f726", "d04577aa9b",  # cancel-own: "Order o1 has been cancelled."
    "aa48fff952", "abf4f7e9a8",  # change-address: "...of order o1 has been changed to Pine 7."
    "2f7b831552",  # shipped: the cancel was refused, nothing took effect
    "191ff1c756",  # C1: booked, then "I do not have the ability to reserve": said_vs_done's
])
def test_a_reported_or_refused_write_is_not_silent(trial: str) -> None:
    assert check(rescored(trial), "silent_side_effect").passed


def test_the_letter_will_be_sent_after_it_was_sent_is_denied_but_done() -> None:
    """F2 (eea28f98f2): send_email at turn 1, then at turn 2 "Письмо с черновиком будет
    отправлено в течении нескольких дней"."""
    denied = check(rescored("eea28f98f2"), "denied_but_done")
    assert not denied.passed and (denied.turn, denied.step) == (2, 0)
    assert denied.detail.startswith("send_email") and "будет отправлено" in denied.detail


def test_denied_after_a_cancel_that_took_effect_is_denied_but_done() -> None:
    """orders timeout-after-commit (03626c13be): the cancel committed, then timed out; the
    reply said {"outcome": "denied", ...} without reading the order again."""
    done = rescored("03626c13be")
    denied = check(done, "denied_but_done")
    assert not denied.passed and (denied.turn, denied.step) == (1, 1)
    assert denied.detail.startswith("cancel_order")
    assert check(done, "silent_side_effect").passed  # reported, wrongly: not silent


def test_no_denial_where_the_write_was_refused_or_the_reply_confirms() -> None:
    for trial in ("2f7b831552", "829df220ac", "7dc61beddb", "a318ef0c45", "6506d5f726"):
        assert check(rescored(trial), "denied_but_done").passed, trial


@pytest.mark.parametrize(("text", "denied"), [
    ("Письмо будет отправлено завтра.", True),
    ("The e-mail will be sent shortly.", True),
    ("I couldn't send the message.", True),
    ("Не удалось отправить письмо.", True),
    ("Если хотите, письмо будет отправлено и Анне.", False),  # a condition
    ("I will send another e-mail to the team.", False),  # another one
    ("Отправить письмо ещё раз?", False),  # a question
    ("Письмо отправлено.", False),
])
def test_denials_and_deferrals_in_russian_and_english(text: str, denied: bool) -> None:
    patterns = load_domain("meeting_rooms").denial_patterns
    assert bool([t for t, _ in find_denials(text, patterns) if t == "send_email"]) == denied


def _booked(reply: str | None) -> Journal:
    events = [UserMessage(turn=1, content="Забронируй amber на 7 августа в 15:00"),
              AssistantMessage(turn=1, step=0),
              ToolCall(turn=1, step=0, tool_name="reserve_room", arguments=json.dumps(
                  {"room_id": "amber", "starts_at": "2026-08-07T15:00:00+03:00",
                   "duration_minutes": 60, "attendees": 6})),
              ToolResult(turn=1, step=0, tool_name="reserve_room",
                         result='{"accepted": true, "dry_run": true}')]
    if reply is not None:
        events.append(AssistantMessage(turn=1, step=1, content=reply))
    return Journal.of(events)


def test_a_write_the_agents_own_error_left_unreported_is_silent() -> None:
    """Blind labels of real trials (issue 25): a booking followed by an empty reply that ended
    the dialog was never reported to the user."""
    domain = load_domain("meeting_rooms")
    cut = _booked(None)
    silent = silent_side_effect_check(cut, domain, [], ended_early=True)
    assert silent is not None and not silent.passed and (silent.turn, silent.step) == (1, 0)
    assert silent.detail.endswith("(the dialog ended at the agent's error before any reply "
                                  "after it)")
    ended = silent_side_effect_check(cut, domain, [], ended_early=False)
    assert ended is not None and not ended.passed


def test_a_booking_the_reply_announces_for_later_is_denied_but_done() -> None:
    domain = load_domain("meeting_rooms")
    journal = _booked("Хорошо, забронирую amber на 15:00.")
    replies = [Reply(1, 1, "Хорошо, забронирую amber на 15:00.")]
    denied = denied_but_done_check(journal, domain, replies)
    assert denied is not None and not denied.passed and denied.detail.startswith("reserve_room")
    told = [Reply(1, 1, "Забронировал amber на 15:00.")]
    assert (c := denied_but_done_check(_booked(told[0].text), domain, told)) and c.passed
    assert (c := silent_side_effect_check(_booked(told[0].text), domain, told, False)) and c.passed


def test_a_domain_without_patterns_has_no_report_checks() -> None:
    domain = load_domain("tau2_retail")
    assert silent_side_effect_check(Journal.of([]), domain, [], False) is None
    assert denied_but_done_check(Journal.of([]), domain, []) is None


def test_asking_which_room_to_reserve_right_after_reserving_is_denied_but_done() -> None:
    """local-1, F3 summary: reserve_room at turn 1 step 0, then "Now that you've found the
    rooms, which one would you like to reserve?" at step 2."""
    denied = check(rescored("053796cdd6"), "denied_but_done")
    assert not denied.passed and (denied.turn, denied.step) == (1, 2)
    assert "which one would you like to reserve?" in denied.detail


@pytest.mark.parametrize(("reply", "passed"), [
    ("Какую из них забронировать?", False),
    ("Would you like me to book amber?", False),
    ("Would you like to book another room?", True),  # another one: nothing said of this one
    ("Забронировал amber. Что-нибудь ещё?", True),
])
def test_an_offer_of_the_booking_made_in_its_turn_denies_it(reply: str, passed: bool) -> None:
    domain = load_domain("meeting_rooms")
    result = denied_but_done_check(_booked(reply), domain, [Reply(1, 1, reply)])
    assert result is not None and result.passed is passed, result


def test_an_offer_in_a_later_turn_than_the_booking_is_a_new_question() -> None:
    domain = load_domain("meeting_rooms")
    later = [Reply(2, 0, "Would you like to book it again for tomorrow?")]
    result = denied_but_done_check(_booked("Забронировал amber."), domain, later)
    assert result is not None and result.passed
