"""Untrusted text stays data: escapes that keep JSON valid, visible bidi and zero-width
characters, JSON Lines split at newlines only, lone surrogates made storable."""

from __future__ import annotations

import json

import pytest

from pipeline.util.untrusted import escape_breaks, json_block, jsonl_lines, storable, visible


@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\u0085", "\x00", "\x1b", "\x7f", "\x9b"])
def test_json_block_escapes_every_line_break_and_control_and_stays_json(char: str) -> None:
    value = {"answer": f"a{char}b", "list": [f"{char}"]}
    text = json_block(value)
    assert char not in text
    assert json.loads(text) == value


def test_escape_breaks_keeps_newlines_and_tabs() -> None:
    assert escape_breaks("a\n\tb\u2028c") == "a\n\tb\\u2028c"


@pytest.mark.parametrize("char", ["\u202a", "\u202e", "\u2066", "\u2069", "\u200b", "\u200d",
                                  "\ufeff", "\u2060", "\x1b"])
def test_visible_shows_bidi_zero_width_and_control_characters(char: str) -> None:
    assert visible(f"x{char}y") == f"x<U+{ord(char):04X}>y"


def test_visible_keeps_ordinary_text() -> None:
    text = "Закрыл тикет 7.\n\tשלום, 東京 ✓"
    assert visible(text) == text


def test_jsonl_lines_split_at_newlines_only() -> None:
    assert jsonl_lines('{"a": "x\u2028y"}\n{"b": "\u0085"}\n') == [
        '{"a": "x\u2028y"}', '{"b": "\u0085"}', ""]


def test_storable_escapes_a_lone_surrogate_only() -> None:
    assert storable("ok \ud800 é") == "ok \\ud800 é"
    assert storable("ok é").encode("utf-8") == "ok é".encode()
