"""Response schemas reach a provider with digit escapes spelled out, meaning unchanged."""

from __future__ import annotations

import re

import pytest

from pipeline.models.client import portable_schema


@pytest.mark.parametrize(("pattern", "spelled"), [
    (r"^\d{4}-\d{2}-\d{2}$", "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"),
    (r"^[\d:]+$", "^[0-9:]+$"),
    (r"^\\d\.\w$", r"^\\d\.\w$"),  # an escaped backslash then "d"; other escapes are kept
])
def test_digit_escapes_are_spelled_out_with_the_same_meaning(pattern: str, spelled: str) -> None:
    assert portable_schema({"pattern": pattern}) == {"pattern": spelled}
    for text in ("2026-08-07", "12:30", "1", "\\d.x", "２０２６-08-07"):
        assert bool(re.fullmatch(pattern, text, re.ASCII)) == bool(re.fullmatch(spelled, text))


def test_only_patterns_change_anywhere_in_the_schema() -> None:
    schema = {"type": "object", "properties": {
        "pattern": {"type": "string", "description": r"a \d in prose stays"},
        "dates": {"type": "array", "items": {"type": "string", "pattern": r"\d"}}}}
    assert portable_schema(schema) == {"type": "object", "properties": {
        "pattern": {"type": "string", "description": r"a \d in prose stays"},
        "dates": {"type": "array", "items": {"type": "string", "pattern": "[0-9]"}}}}
