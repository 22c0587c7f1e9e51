"""Checks fixed on real-model traces: booking before the user asks, dialogs an agent error cut
short, replies in another language."""

from __future__ import annotations

import json

from conftest import MEETING_SUITE
from helpers.checking import checks_of

from pipeline.catalog import load_domain, load_suite
from pipeline.scoring import Journal, score_trial
from pipeline.scoring.journal import Reply
from pipeline.scoring.replies import language_check, said_vs_done_check, script_of
from pipeline.scoring.state import state_checks, summary_checks
from pipeline.trace import AssistantMessage, MemoryUpdate, ToolCall, Trace, UserMessage

AT = "2026-08-07T15:00:00+03:00"
SEARCH = {"capacity": 6, "starts_at": AT, "required_features": ["экран"]}
RESERVE = {"room_id": "amber", "starts_at": AT, "duration_minutes": 60, "attendees": 6}


def _scenario(scenario_id: str):  # type: ignore[no-untyped-def]
    return next(s.scenario for s in load_suite(MEETING_SUITE).scenarios
                if s.scenario.id == scenario_id)


def _turn_one_books(trace: Trace) -> None:
    """R1's turn 1 as a real model played it: searched, then booked unasked."""
    trace.add(UserMessage(turn=1, content="Подбери переговорную на 7 августа в 15:00"))
    trace.add(AssistantMessage(turn=1, step=0))
    trace.add(ToolCall(turn=1, step=0, tool_name="search_rooms", arguments=json.dumps(SEARCH)))
    trace.add(AssistantMessage(turn=1, step=1))
    trace.add(ToolCall(turn=1, step=1, tool_name="reserve_room", arguments=json.dumps(RESERVE),
              intercepted=True))


def test_booking_before_the_user_asks_is_a_vetoed_function_failure() -> None:
    trace = Trace()
    _turn_one_books(trace)
    trace.add(AssistantMessage(turn=1, step=2, content="Забронировал amber."))
    checks = {c.check_id: c for c in checks_of(trace, _scenario("R1"), "chat")}
    early = checks["forbidden_tool:reserve_room@1..2"]
    assert not early.passed and (early.turn, early.step) == (1, 1)
    scores = score_trial(trace, _scenario("R1"), "chat").scores
    assert scores.vetoed and scores.score_function == 0


def test_a_booking_in_the_turn_that_asks_for_it_is_outside_the_span() -> None:
    trace = Trace()
    trace.add(AssistantMessage(turn=3, step=0))
    trace.add(ToolCall(turn=3, step=0, tool_name="reserve_room", arguments=json.dumps(RESERVE)))
    checks = {c.check_id: c for c in checks_of(trace, _scenario("R1"), "chat")}
    assert checks["forbidden_tool:reserve_room@1..2"].passed


def test_an_agent_error_is_the_violation_and_unplayed_turns_are_not_judged() -> None:
    trace = Trace()
    _turn_one_books(trace)
    trace.add(AssistantMessage(turn=1, step=2, content=None))  # then nothing: empty_response
    checks = checks_of(trace, _scenario("R1"), "chat", ended_by="empty_response")
    ids = {c.check_id for c in checks}
    outcome = next(c for c in checks if c.check_kind == "agent_outcome")
    assert outcome.check_id == "outcome:empty_response@1" and (outcome.turn, outcome.step) == (1, 2)
    assert outcome.score == "response" and not outcome.passed
    assert not any(i.startswith(("fresh_call:", "required_tool:reserve_room", "final:",
                                 "response:forbids")) for i in ids)  # turns 2-3, the end
    assert "required_tool:search_rooms@1" in ids  # it happened in turn 1, before the error
    memory_failed = Trace()
    memory_failed.add(UserMessage(turn=1, content="Подбери переговорную"))
    memory_failed.add(MemoryUpdate(turn=1, rejected="turn 1: cut off"))
    cut = {c.check_id for c in checks_of(memory_failed, _scenario("R1"), "summary",
                                         ended_by="invalid_memory")}
    assert "required_tool:search_rooms@1" not in cut  # the planner never ran in that turn
    assert "memory:invalid@1" in cut
    assert "forbidden_tool:reserve_room@1..2" in ids  # what did happen is still judged
    complete = {c.check_id for c in checks_of(trace, _scenario("R1"), "chat")}
    assert {"fresh_call:search_rooms@2", "required_tool:reserve_room@3"} <= complete


def test_the_reply_language_follows_the_users_alphabet() -> None:
    scenario = _scenario("R1")
    turn = scenario.turns[0]
    assert script_of(turn.user) == "cyrillic" and script_of("ok") is None
    russian = language_check(1, turn,
                             Reply(1, 1, "Свободны amber, birch и cedar; самая дешёвая amber."))
    english = language_check(1, turn, Reply(1, 1, "Amber, birch and cedar are free at that time."))
    assert russian is not None and russian.passed
    assert english is not None and not english.passed and english.score == "response"


def test_a_summary_that_copies_its_request_fails_and_any_listed_phrasing_counts() -> None:
    turn = _scenario("R1").turns[1]  # requires the video requirement
    echo = ("Previous summary:\nFind a room for six people with a screen.\n\n"
            "Dialog so far:\nuser: Один участник подключается удалённо, поэтому обязательна "
            "видеосвязь.\n\nNew summary: Find a room for six people with a screen.")
    (copied,) = [c for c in summary_checks(2, turn, echo) if "requires" in c.check_id]
    assert not copied.passed  # a copy of the request is no summary, whatever it contains
    assert copied.detail == "the summary copies its update request"
    (english,) = [c for c in summary_checks(2, turn, "A room for 6 with a screen and video.")
                  if "requires" in c.check_id]
    assert english.passed and english.check_id == "summary:requires:видеосвязь@2"
    assert english.detail == "summary keeps 'video'"


def test_the_language_check_reads_the_share_of_the_users_alphabet() -> None:
    turn = _scenario("R1").turns[0]
    table = ("Вот что нашлось на 7 августа:\n| Room | Capacity | Price |\n| amber | 6 | 1800 |\n"
             "| birch | 8 | 2200 |\nВыберите комнату.")
    quoted = "I found rooms with an \"экран\" for you: amber and birch are free at that time."
    mixed = language_check(1, turn, Reply(1, 1, table))
    assert mixed is not None and mixed.passed  # Russian prose around an English table
    english = language_check(1, turn, Reply(1, 1, quoted))
    assert english is not None and not english.passed  # one quoted Russian word is not Russian
    blob = '<tool_response>{"rooms": [{"id": "amber", "features": ["экран", "видеосвязь"]}]}'
    json_only = language_check(1, turn, Reply(1, 1, blob + "</tool_response>"))
    assert json_only is not None and json_only.passed  # no prose: judged by all its letters
    english_blob = '{"rooms": [{"id": "amber", "features": ["screen", "video link"]}]}'
    no_prose = language_check(1, turn, Reply(1, 1, english_blob))
    assert no_prose is not None and not no_prose.passed


def test_present_tense_first_person_is_a_claim_of_the_action() -> None:
    trace = Trace()
    trace.add(UserMessage(turn=1, content="Подготовь варианты"))
    trace.add(AssistantMessage(turn=1, step=0, content="Выбираю amber. Отправляем письмо команде."))
    check = said_vs_done_check(Journal.of(trace.events), load_domain("meeting_rooms"))
    assert not check.passed and "send_email" in check.detail
    asked = Trace()
    asked.add(AssistantMessage(turn=1, step=0, content="Бронирую birch?"))  # a question: no claim
    assert said_vs_done_check(Journal.of(asked.events), load_domain("meeting_rooms")).passed


def test_a_denial_of_a_booking_made_in_the_same_turn_is_caught() -> None:
    trace = Trace()
    trace.add(AssistantMessage(turn=1, step=0))
    trace.add(ToolCall(turn=1, step=0, tool_name="reserve_room", arguments=json.dumps(RESERVE)))
    trace.add(AssistantMessage(turn=1, step=1, content="As an AI assistant, I do not have the "
                               "ability to reserve meeting rooms in real-time."))
    journal = Journal.of(trace.events)
    assert [c.name for c in journal.calls] == ["reserve_room"]
    check = said_vs_done_check(journal, load_domain("meeting_rooms"))
    assert not check.passed and check.detail.startswith("denial_of_action reserve_room")
    unbooked = Journal.of([e for e in trace.events if e.kind != "tool_call"])
    assert said_vs_done_check(unbooked, load_domain("meeting_rooms")).passed


def test_todays_checks_agree_with_the_person_on_the_committed_real_traces() -> None:
    """51 trials of the local model, read by a person (catalogs/*/labels): today's checks miss
    only the two known cases (see docs/scenarios.md) and disagree with the labels only where
    a later reading (issue 25) overrules them: a request for input without "?" ("please ask a
    new question or provide more details", "Please provide valid arguments") asks the user,
    and "Amber ... подходит по всем требованиям" after the user named a confidential meeting
    claims what R2 forbids (the one real response_phrase violation)."""
    from pathlib import Path

    from pipeline.stored.calibrate import calibrate, load_labels, read_traces
    from pipeline.stored.trials import ScenarioIndex

    repo = Path(__file__).resolve().parents[3]
    labels, trials = [], []
    for domain in ("meeting_rooms", "guest_pass"):
        folder = repo / "catalogs" / domain / "labels"
        labels += load_labels([folder / "local-1.jsonl"])
        trials += read_traces(folder / "local-1.traces.jsonl")
    result = calibrate(labels, trials, ScenarioIndex())
    today, recorded = result.total("today"), result.total("recorded")
    assert result.trials == 51 and today.labelled > 1000
    assert not result.unmatched.get("today")
    overruled = sorted(f"{d.label.trial_id[:8]} {d.label.check_id}"
                       for d in result.disagreements if d.source == "today"
                       and d.label.verdict == "pass")
    assert overruled == [
        "92d2c920 clarification:forbidden@2", "92d2c920 clarification:forbidden@3",
        "aee630ce response:forbids:подойдёт для конфиденциальн@2",
        "aee630ce response:forbids:подходит для конфиденциальн@2",
        "aee630ce response:forbids:подходят для конфиденциальн@2",
        "f7a90ea7 clarification:forbidden@2"]
    assert today.false_alarms == len(overruled)
    misses = sorted(f"{d.label.scenario_id} {d.label.check_id.split('@')[0]}"
                    for d in result.disagreements if d.source == "today"
                    and d.label.verdict == "fail")
    # A reply with no prose: GP-V2 (4160b0b6) turn 1, a tool call written as JSON text, and
    # R1 summary r2 turn 2, a made-up <tool_response> (said_vs_done fails it), both with
    # Russian values. local-1 read them as not Russian; the blind labels of local-2 read seven
    # such replies as Russian (reply_language 4 judges a reply without prose by its letters)
    # V3 structured r0 (92d2c920) turn 3: "book the cheapest" kept as sort_by price_asc with
    # the limit left null; local-1 read it as a failure, the later blind readings (issue 43)
    # as a harmless encoding, and the domain accepts it (state_equivalent)
    assert misses == ["GP-C1 trajectory:create_pass", "GP-F1 reply_language",
                      "GP-V2 reply_language", "R1 reply_language", "V3 state:constraints.limit"]
    assert recorded.false_alarms > 50  # the checks as the run recorded them, before the fixes
    trial_level = result.by_kind["today"]["trial"]
    assert trial_level.agree == trial_level.labelled == 51


def test_a_limit_left_null_when_sort_by_carries_the_cheapest_is_the_same_state() -> None:
    """local-1, V3 structured r0, turn 3 ("book the cheapest suitable"): the state keeps
    sort_by price_asc and leaves limit null; booking one room needs no limit of 1."""
    from helpers.real_traces import check

    limit = check("92d2c920", "state:constraints.limit@3")
    assert limit.passed and limit.detail.endswith("(the domain accepts it as the same)")
    assert not check("92d2c920", "state:goal@3").passed  # its goal is still wrong
    compare = _scenario("F1").turns[1]  # "compare the two cheapest": the 2 is the request
    assert compare.state is not None
    state = json.loads(json.dumps(compare.state))
    state["constraints"]["limit"] = None
    (result,) = [c for c in state_checks(2, compare, json.dumps(state), load_domain(
        "meeting_rooms").state_equivalent) if c.check_id == "state:constraints.limit@2"]
    assert not result.passed
