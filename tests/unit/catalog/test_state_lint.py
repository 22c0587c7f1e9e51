"""The golden-state lint: a state field the check compares but no prompt, tool or state-schema
description mentions is flagged (the three-errors method's lesson for structured memory); the
bundled suites have none."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO
from helpers.commands import cli

from pipeline.catalog import known_suites, load_domain, load_suite, load_suites, set_extra_roots
from pipeline.catalog.state_lint import described, lint_states, mentions, told_text


@pytest.fixture(autouse=True)
def _no_extra_roots() -> Iterator[None]:
    yield
    set_extra_roots([])


def _rooms_with_an_untold_field(tmp_path: Path) -> Path:
    """The meeting-room domain copied under another name, with the state schema's descriptions
    of ``sort_by`` and ``limit`` taken away: its suite's path."""
    root = tmp_path / "catalog"
    shutil.copytree(REPO / "catalogs" / "meeting_rooms", root / "rooms_copy",
                    ignore=shutil.ignore_patterns("labels"))
    schema_path = root / "rooms_copy" / "state.schema.json"
    schema = json.loads(schema_path.read_text("utf-8"))
    for field in ("sort_by", "limit"):
        del schema["properties"]["constraints"]["properties"][field]["description"]
    schema_path.write_text(json.dumps(schema, ensure_ascii=False), "utf-8")
    suite = root / "rooms_copy" / "suites" / "intent_change.jsonl"
    suite.write_text(suite.read_text("utf-8").replace('"domain": "meeting_rooms"',
                                                      '"domain": "rooms_copy"'), "utf-8")
    set_extra_roots([root])
    return suite


def test_every_bundled_suite_tells_every_golden_state_field() -> None:
    suites = load_suites(list(known_suites().values()))
    assert any(turn.state for s in suites for loaded in s.scenarios
               for turn in loaded.scenario.turns)
    assert [f.message() for s in suites for f in lint_states(s)] == []


def test_a_field_is_told_by_its_schema_description_or_by_its_name_in_a_prompt_or_tool() -> None:
    rooms = load_domain("meeting_rooms")
    assert described(rooms.state_schema, "constraints.sort_by")
    assert not described(rooms.state_schema, "constraints.attendees")
    assert mentions(told_text(rooms), "attendees")  # a parameter of reserve_room
    assert not mentions(told_text(rooms), "sort_by")
    assert not mentions("a time limitation", "limit")  # a whole word, not a part of one


def test_an_undescribed_field_the_golden_checks_is_flagged(tmp_path: Path) -> None:
    suite = _rooms_with_an_untold_field(tmp_path)
    findings = lint_states(load_suite(suite))
    assert {f.path for f in findings} == {"constraints.sort_by", "constraints.limit"}
    assert len(findings) == 2 * 11  # every scenario's golden states carry both
    first = findings[0]
    assert (first.scenario_id, first.turn) == ("R1", 1)
    assert f"{suite}:1: turns[0].state.constraints.sort_by: " in first.message()
    assert "the agent was not told" in first.message()


def test_lint_suite_exits_1_naming_the_untold_field(tmp_path: Path) -> None:
    suite = _rooms_with_an_untold_field(tmp_path)
    code, out, err = cli("lint-suite", "--catalog", str(suite.parents[2]), "--suite", str(suite))
    assert code == 1, out + err
    assert "turns[0].state.constraints.limit" in err
    assert "22 golden state field(s)" in out
    code, out, err = cli("lint-suite", "--suite",
                         str(REPO / "catalogs" / "meeting_rooms" / "suites" /
                             "intent_change.jsonl"))
    assert code == 0, out + err
