"""Phrases as whole words in the domain's languages, forbidden claims in any of them, and
requests for input without a question mark (the words live in catalogs/)."""

from __future__ import annotations

import pytest
from conftest import MEETING_SUITE
from helpers.real_traces import check

from catalogs.languages import BOTH
from pipeline.catalog import load_domain, load_suite
from pipeline.catalog.models import Turn
from pipeline.scoring.journal import Reply
from pipeline.scoring.languages import has_phrase
from pipeline.scoring.replies import clarification_check, phrase_checks

BUNDLED_WITH_CLAIMS = ("meeting_rooms", "guest_pass", "orders", "support_agent", "clinic",
                       "discounts", "warehouse_ops")


@pytest.mark.parametrize("text,phrase,found", [
    ("an external auditorium", "auditor", False),
    ("two external auditors", "auditor", True),
    ("будет внешний аудитор", "аудитор", True),
    ("с внешним аудитором", "аудитор", True),
    ("материалы конфиденциальные", "конфиденциальн", True),
    ("the booking was cancelled", "cancel", True),
    ("16:00-17:00", "16:00", True),
    ("116:00", "16:00", False),
    ("Do not book anything", "not book", True),
])
def test_phrases_match_whole_words_with_their_languages_endings(text: str, phrase: str,
                                                                 found: bool) -> None:
    assert has_phrase(text, phrase, BOTH) is found


def test_a_summary_that_turns_the_auditor_into_an_auditorium_loses_it() -> None:
    """Trial 8c7baf0d (R2, summary): "External Auditorium" kept no auditor."""
    lost = check("8c7baf0d", "summary:requires:аудитор@2")
    assert not lost.passed and lost.detail.startswith("summary lost")
    kept = check("aee630ce", "summary:requires:аудитор@2")  # "an external auditor present"
    assert kept.passed


def _turn(scenario_id: str, number: int) -> Turn:
    scenario = next(s.scenario for s in load_suite(MEETING_SUITE).scenarios
                    if s.scenario.id == scenario_id)
    return scenario.turns[number - 1]


@pytest.mark.parametrize("scenario_id,text,broken", [
    ("R1", "Amber is suitable for your meeting.", True),
    ("R1", "Then amber suits you best.", True),
    ("R1", "Birch is suitable; amber has no video.", False),
    ("R1", "Amber is not suitable any more.", False),
    ("R1", "Amber подходит.", True),
    ("R2", "Amber is suitable for confidential meetings.", True),
    ("R2", "Birch is soundproof.", True),
    ("R2", "I cannot tell whether a room is soundproof?", False),
    ("C1", "Your booking was cancelled.", True),
    ("C1", "Your booking was not cancelled.", False),
    ("F1", "Your booking is ready.", True),
])
def test_a_forbidden_claim_written_in_russian_is_caught_in_english(
        scenario_id: str, text: str, broken: bool) -> None:
    turn = _turn(scenario_id, 2)
    checks = phrase_checks(2, turn, Reply(2, 0, text), load_domain("meeting_rooms"))
    assert any(not c.passed for c in checks) is broken


def test_the_real_response_phrase_violation_is_caught() -> None:
    """Trial aee630ce (R2, summary): "Amber ... подходит по всем требованиям" right after the
    user named a confidential meeting; the soundproof claim is another claim."""
    failed = check("aee630ce", "response:forbids:подходит для конфиденциальн@2")
    assert not failed.passed and "подходит по всем требованиям" in failed.detail
    assert (failed.turn, failed.step) == (2, failed.step)
    assert check("aee630ce", "response:forbids:звукоизолирован@2").passed


@pytest.mark.parametrize("domain", BUNDLED_WITH_CLAIMS)
def test_every_bundled_domains_claims_are_declared_in_russian_and_english(domain: str
                                                                            ) -> None:
    loaded = load_domain(domain)
    assert {lang.code for lang in loaded.languages} == {"ru", "en"}
    claimed = {p.tool for p in loaded.claim_patterns}
    assert claimed and claimed <= {t.name for t in loaded.tools if t.kind == "write"}
    declared = {(p.tool, p.language) for p in loaded.claim_patterns}
    assert declared == {(tool, code) for tool in claimed for code in ("ru", "en")}


@pytest.mark.parametrize("text,asks", [
    ("To continue the conversation, please ask a new question or provide more details.", True),
    ("Please provide valid arguments for the search.", True),
    ("Уточните, пожалуйста, сколько будет участников.", True),
    ("Choose `birch`.", False),
    ("Let me know if you need anything else.", False),
    ("Готово: birch забронирована.", False),
])
def test_a_request_for_input_without_a_question_mark_asks(text: str, asks: bool) -> None:
    turn = _turn("V1", 2)
    assert turn.clarification == "forbidden"
    result = clarification_check(2, turn, Reply(2, 0, text), BOTH)
    assert result is not None and result.passed is not asks


def test_please_provide_more_details_is_a_forbidden_question_on_a_real_trace() -> None:
    """Trial 92d2c920 (V3, structured) answers every turn "please ask a new question or
    provide more details": a question at turns 2 and 3, where none is allowed."""
    for turn in (2, 3):
        asked = check("92d2c920", f"clarification:forbidden@{turn}")
        assert not asked.passed and asked.turn == turn


def test_a_recorded_change_with_no_update_is_a_claim_without_the_action() -> None:
    """Trial bfba7d4f (GP-V3, structured): "Your changes have been recorded." after no
    update_pass_request at all."""
    claimed = check("bfba7d4f", "said_vs_done")
    assert not claimed.passed
    assert claimed.detail.startswith("claim_without_action update_pass_request")
