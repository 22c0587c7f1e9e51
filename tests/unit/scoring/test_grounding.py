"""Replies grounded in what the tools said (grounding, forbidden claims as facts), on the
committed real traces of the local model and on replies written to the same shape."""

from __future__ import annotations

import json

import pytest
from helpers.real_traces import REPO, check, rescored

from pipeline.catalog import load_domain
from pipeline.scoring import Journal
from pipeline.scoring.grounding import grounding_checks, introduced_before, read_reply
from pipeline.stored.calibrate import read_traces
from pipeline.stored.rescore import Rescored, rescore
from pipeline.stored.trials import ScenarioIndex
from pipeline.trace import AssistantMessage, Event, ToolCall, ToolResult, UserMessage

AT = "2026-08-07T15:00:00+03:00"
ROOMS = {"rooms": [
    {"capacity": 6, "features": ["экран"], "id": "amber", "price_per_hour": 1800},
    {"capacity": 8, "features": ["экран", "видеосвязь"], "id": "birch", "price_per_hour": 2200},
    {"capacity": 12, "features": ["экран", "видеосвязь"], "id": "cedar", "price_per_hour": 3600},
]}


def _searched(reply: str, user: str = "Подбери переговорную на 7 августа в 15:00.",
              rooms: dict[str, object] | None = None) -> Journal:
    """One turn: the user asks, ``search_rooms`` answers ``rooms``, the agent replies."""
    events: list[Event] = [
        UserMessage(turn=1, content=user),
        AssistantMessage(turn=1, step=0),
        ToolCall(turn=1, step=0, tool_name="search_rooms",
                 arguments=json.dumps({"capacity": 6, "starts_at": AT,
                                       "required_features": ["экран"]})),
        ToolResult(turn=1, step=0, tool_name="search_rooms",
                   result=json.dumps(ROOMS if rooms is None else rooms, ensure_ascii=False)),
        AssistantMessage(turn=1, step=1, content=reply),
    ]
    return Journal.of(events)


def _grounding(reply: str, user: str = "Подбери переговорную на 7 августа в 15:00."
               ) -> tuple[bool, str]:
    (result,) = grounding_checks(_searched(reply, user), load_domain("meeting_rooms"))
    return result.passed, result.detail


# -- the real traces the issue names --------------------------------------------------------

def _after(trial_prefix: str) -> Rescored:
    """A trial of run local-2-after (local-2-before holds trials of the same ids)."""
    path = REPO / "catalogs" / "meeting_rooms" / "labels" / "local-2-after.traces.jsonl"
    (trial,) = [t for t in read_traces(path) if str(t.row["trial_id"]).startswith(trial_prefix)]
    done = rescore(trial, ScenarioIndex())
    assert done is not None
    return done


def test_r2_rooms_relisted_with_the_auditor_as_a_feature_fail_in_russian() -> None:
    """local-2-after, R2 chat: turn 2 re-lists amber, birch and cedar with "внешний аудитор"
    appended to their features; the phrase checks ("подходит для конфиденциальн") pass it."""
    trial = _after("c33686d5")
    assert check(trial, "response:forbids:подходит для конфиденциальн@2").passed
    assert check(trial, "grounding@1").passed  # turn 1 listed what the search gave
    grounded = check(trial, "grounding@2")
    assert not grounded.passed and grounded.turn == 2
    assert "Amber features=внешний аудитор: search_rooms gave features=['экран']" \
        in grounded.detail
    forbidden = check(trial, "claim:forbids:features=внешний аудитор@2")
    assert not forbidden.passed and "Amber" in forbidden.detail
    assert check(trial, "claim:forbids:features=звукоизоляция@2").passed


def test_r2_confidential_materials_listed_as_a_feature_fail_in_english() -> None:
    """local-1, R2 summary r0: invented rooms "Room A/B/C" at turn 1, and at turn 2 each
    listed with "External Auditorium, Confidential Materials" among its features."""
    trial = rescored("8c7baf0d")
    invented = check(trial, "grounding@1")
    assert not invented.passed
    assert "room 'A' that no tool result or user turn introduced" in invented.detail
    confidential = check(trial, "claim:forbids:features=конфиденциальность@2")
    assert not confidential.passed and "Confidential Materials" in confidential.detail
    assert not check(trial, "claim:forbids:features=внешний аудитор@2").passed


def test_rooms_invented_under_a_list_title_fail_in_russian() -> None:
    """local-1, R2 chat r0: no search, then five "rooms" titled "Матрица 10x10" ... each with
    a price and a capacity."""
    invented = check(rescored("933ece55"), "grounding@1")
    assert not invented.passed
    assert "room 'Матрица 10x10' that no tool result" in invented.detail
    assert "(+2 more)" in invented.detail


def test_a_json_object_the_reply_writes_names_one_room_and_holds_its_values() -> None:
    """local-1, R1 summary r2: turn 2 is a made-up <tool_response> listing amber with
    видеосвязь; each object's values are its own room's (its id comes last in the object)."""
    grounded = check(rescored("2131960f"), "grounding@2")
    assert not grounded.passed
    assert grounded.detail == "amber features=видеосвязь: search_rooms gave features=['экран']"


def test_the_committed_grounding_labels_agree_but_for_a_claim_said_without_its_feature(
        ) -> None:
    """catalogs/meeting_rooms/labels/*.grounding.jsonl: the grounding and forbidden-claim
    verdicts of 19 real trials as read for this issue. The one miss: "Amber ... подходит по
    всем требованиям" claims the confidentiality R2 forbids without naming it (the phrase
    fallback catches it)."""
    from pipeline.catalog.domains import catalog_roots
    from pipeline.stored.calibrate import calibrate_sets, committed_label_sets

    sets = [s for s in committed_label_sets(catalog_roots()) if ".grounding" in s.name]
    result = calibrate_sets(sets, ScenarioIndex())
    assert result.by_kind["today"]["grounding"].agreement == 1.0
    assert [(d.label.trial_id[:8], d.label.check_id) for d in result.disagreements
            if d.source == "today"] == [
        ("aee630ce", "claim:forbids:features=конфиденциальность@2")]


def test_a_room_named_in_a_russian_sentence_that_no_search_gave_fails() -> None:
    """local-1, R1 structured r2: the search (with "screen" for "экран") found no room, the
    model booked "R101" anyway and wrote "Да, я могу забронировать комнату R101" each turn."""
    for turn in (1, 2, 3):
        invented = check(rescored("7d555457"), f"grounding@{turn}")
        assert not invented.passed
        assert invented.detail == "room 'R101' that no tool result or user turn introduced"


def test_a_list_of_what_the_search_gave_is_grounded() -> None:
    """local-2-after, R2 chat turn 1: "1. Amber - 15:00, 6 человек, экран" and so on."""
    assert check(_after("c33686d5"), "grounding@1").passed


# -- replies written to the shapes the real ones take -----------------------------------------

@pytest.mark.parametrize("reply", [
    "Свободна комната «Берёшка»: 8 мест, 2000 ₽ в час.",
    "Могу предложить переговорную Седина на 10 мест.",
    "Room Sedina is free at 15:00 for 6 people.",
    "1. **Room 12345**\n   - Capacity: 6\n   - Price: 400 ₽",
])
def test_a_room_no_result_gave_is_invented(reply: str) -> None:
    ok, detail = _grounding(reply)
    assert not ok and "that no tool result or user turn introduced" in detail


@pytest.mark.parametrize("reply", [
    "amber (1800 ₽ в час, есть видеосвязь) и birch (2200 ₽).",
    "Amber has a screen and video conferencing, 1800 RUB per hour.",
    "birch: 8 мест, экран, звукоизоляция.",
    "cedar (12 мест, 3200 ₽ в час).",
    "Birch seats 10 people.",
])
def test_a_value_the_search_contradicts_fails(reply: str) -> None:
    ok, detail = _grounding(reply)
    assert not ok and "search_rooms gave" in detail


@pytest.mark.parametrize("reply", [
    "Тогда amber не годится: в ней нет видеосвязи. С экраном и видеосвязью свободны birch "
    "(8 мест, 2200 ₽ в час) и cedar (12 мест, 3600 ₽ в час).",
    "Amber has no video link; birch and cedar do.",
    "Видеосвязи нет в amber, зато birch (2200 ₽) с видеосвязью.",
    "Нужна ли звукоизоляция? birch — 8 мест, экран и видеосвязь.",
    "Бёрч стоит 2200 ₽ в час, а Кедр — 3600 ₽ в час.",
    "Если нужна видеосвязь, подойдёт birch.",
])
def test_what_agrees_with_the_search_or_is_not_stated_passes(reply: str) -> None:
    ok, detail = _grounding(reply)
    assert ok, detail


def test_a_room_the_user_named_is_introduced_and_a_refused_search_introduces_none() -> None:
    ok, _ = _grounding("Комната Орион свободна.", user="Есть ли свободная комната Орион?")
    assert ok
    refused = _searched("Свободна amber.")
    events = [e if not isinstance(e, ToolResult) else ToolResult(
        turn=1, step=0, tool_name="search_rooms", result="{}", tool_error="refused")
        for e in refused.events]
    (result,) = grounding_checks(Journal.of(events), load_domain("meeting_rooms"))
    assert not result.passed and "'amber'" in result.detail


def test_the_latest_result_about_a_room_is_the_one_that_counts() -> None:
    kind = load_domain("meeting_rooms").entities[0]
    cheaper = {"rooms": [{"capacity": 6, "features": ["экран"], "id": "amber",
                          "price_per_hour": 1500}]}
    journal = _searched("amber", rooms=cheaper)
    introduced = introduced_before(journal.events, kind, 1, 1)
    assert introduced.records["amber"].item["price_per_hour"] == 1500
    claims = read_reply("amber стоит 1500 ₽ в час.", kind, introduced).claims
    assert [(c.key, c.attribute, c.value) for c in claims] == [("amber", "price", 1500.0)]


def test_a_domain_without_entities_has_no_grounding_check() -> None:
    assert grounding_checks(_searched("amber"), load_domain("orders")) == []


def _order_journal(reply: str, status: str = "pending") -> Journal:
    order = {"order_id": "#W2611340", "user_id": "u1", "status": status, "items": []}
    return Journal.of([
        UserMessage(turn=1, content="Where is my order?"),
        AssistantMessage(turn=1, step=0),
        ToolCall(turn=1, step=0, tool_name="get_order_details",
                 arguments=json.dumps({"order_id": "#W2611340"})),
        ToolResult(turn=1, step=0, tool_name="get_order_details", result=json.dumps(order)),
        AssistantMessage(turn=1, step=1, content=reply),
    ])


@pytest.mark.parametrize(("reply", "status", "problem"), [
    ("Your order #W2611340 is still pending.", "pending", None),
    ("Your order #W2611340 is pending.", "pending (item modified)", None),
    ("Your order #W2611340 has been delivered.", "pending", "status=delivered"),
    ("Order #W2611340 is pending, so it can be cancelled.", "pending", None),
    ("Your order #W7777777 was cancelled.", "pending", "'#W7777777' that no tool result"),
])
def test_tau2_retail_orders_and_their_statuses_are_grounded(reply: str, status: str,
                                                            problem: str | None) -> None:
    (result,) = grounding_checks(_order_journal(reply, status), load_domain("tau2_retail"))
    assert result.passed is (problem is None), result.detail
    assert problem is None or problem in result.detail


def test_every_bundled_forbidden_claim_names_what_its_domain_declares() -> None:
    from pipeline.catalog import bundled_suites, load_suites
    from pipeline.catalog.models import ForbiddenClaim
    from pipeline.scoring.grounding import _declared

    rules = [(loaded.scenario.domain, rule) for suite in load_suites(bundled_suites())
             for loaded in suite.scenarios for turn in loaded.scenario.turns
             for rule in turn.forbidden_claims]
    assert {rule.value for _, rule in rules} >= {"конфиденциальность", "звукоизоляция"}
    for name, rule in rules:
        _declared(rule, load_domain(name).entities, name)
    with pytest.raises(ValueError, match="declares no such attribute value"):
        _declared(ForbiddenClaim(attribute="features", value="проектор"),
                  load_domain("meeting_rooms").entities, "meeting_rooms")

