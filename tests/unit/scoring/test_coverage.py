"""Coverage the real traces showed missing: a short user turn is judged by the dialog's
language, and every guest-pass story requires its writes at the turns it tells them."""

from __future__ import annotations

import json

from conftest import REPO
from helpers.real_traces import check, rescored

from pipeline.catalog.models import Turn
from pipeline.scoring.journal import Reply
from pipeline.scoring.replies import dialog_alphabet, language_check


def test_a_short_user_turn_is_judged_by_the_dialogs_language() -> None:
    russian = dialog_alphabet(["Подбери переговорную на 7 августа.", "Да."])
    assert russian == "cyrillic"
    short = Turn(user="Да.", golden=[{"reply": "Готово."}])
    english = language_check(2, short, Reply(2, 0, "Sorry, I cannot help with that."), russian)
    assert english is not None and not english.passed
    assert "the dialog's language" in english.detail
    russian_reply = language_check(2, short, Reply(2, 0, "Готово, бронь на месте."), russian)
    assert russian_reply is not None and russian_reply.passed
    assert language_check(2, short, Reply(2, 0, "Sorry."), None) is None


def test_short_turns_of_the_real_traces_get_a_language_verdict() -> None:
    """V3 turn 2 ("Нет, нас будет шестеро.") had no reply_language check: trial 92d2c920
    (structured) answered it in English, trial c850605e (chat) in Russian; GP-V3 turn 3
    ("Да, всё верно.") in trial bfba7d4f was answered in English."""
    assert not check("92d2c920", "reply_language@2").passed
    assert check("c850605e", "reply_language@2").passed
    assert not check("bfba7d4f", "reply_language@3").passed


def test_every_guest_pass_story_requires_the_writes_it_tells() -> None:
    """The prompt: record every value given or corrected with update_pass_request."""
    path = REPO / "catalogs" / "guest_pass" / "suites" / "guest_pass.jsonl"
    for line in path.read_text("utf-8").splitlines():
        scenario = json.loads(line)
        golden_updates = {n for n, turn in enumerate(scenario["turns"], start=1)
                          for g in turn["golden"]
                          if g.get("call", {}).get("name") == "update_pass_request"}
        required = {r["turn"] for r in scenario["expectations"]["required_tools"]
                    if r["tool"] == "update_pass_request"}
        assert required == golden_updates, scenario["id"]


def test_gp_v3_without_a_written_request_fails_at_turn_one() -> None:
    """Trial bd314a64 (GP-V3, summary) never wrote the request (only get_pass_rules at turn
    1, then confirm and create at turn 3): its first violation is now the missing update at
    turn 1, not the summary at turn 2."""
    done = rescored("bd314a64")
    assert done.scores.first_violation_check == "required_tool:update_pass_request@1"
    assert not check("bd314a64", "required_tool:update_pass_request@2").passed
    assert check("08bf5b6b", "required_tool:update_pass_request@1").passed
