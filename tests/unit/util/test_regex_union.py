"""``regex_union``: the joined pattern finds something exactly where one of its patterns does,
over every catalog's texts and every pattern group scoring joins; patterns it cannot join
exactly are left alone."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pipeline.catalog import load_domain
from pipeline.scoring.cases import json_strings
from pipeline.scoring.claims import split_clauses
from pipeline.util.regex_union import any_found, union

CATALOGS = Path(__file__).resolve().parents[3] / "catalogs"


def _texts() -> list[str]:
    """Every string of every catalog's JSON and JSONL files, whole and clause by clause."""
    texts: set[str] = set()
    for path in sorted(CATALOGS.rglob("*.json*")):
        lines = path.read_text(encoding="utf-8").splitlines() if path.suffix == ".jsonl" else [
            path.read_text(encoding="utf-8")]
        for line in lines:
            if line.strip():
                for text in json_strings(json.loads(line)):
                    texts.add(text)
                    texts.update(split_clauses(text))
    return sorted(texts)


def _groups() -> list[tuple[str, tuple[re.Pattern[str], ...]]]:
    """Every pattern group scoring joins, in every catalog domain that loads."""
    groups: list[tuple[str, tuple[re.Pattern[str], ...]]] = []
    for folder in sorted(p for p in CATALOGS.iterdir() if (p / "tools.json").exists()):
        domain = load_domain(folder.name)
        groups += [(f"{folder.name} claims {p.tool}", p.affirmative)
                   for p in domain.claim_patterns]
        groups += [(f"{folder.name} denials {p.tool}", p.patterns)
                   for p in domain.denial_patterns]
        groups += [(f"{folder.name} offers {p.tool}", p.offers)
                   for p in domain.denial_patterns if p.offers]
        groups += [(f"{folder.name} {kind.name}.{a.name}", tuple(p for p, _ in a.value_patterns))
                   for kind in domain.entities for a in kind.attributes if a.kind != "number"]
    return groups


def test_the_union_finds_exactly_what_its_patterns_find() -> None:
    texts = _texts()
    joined_groups = found = missed = 0
    for name, patterns in _groups():
        joined = union(patterns)
        if joined is None:
            continue
        joined_groups += 1
        for text in texts:
            expected = any(p.search(text) for p in patterns)
            assert any_found(patterns, joined, text) == expected, (name, text)
            found += expected
            missed += not expected
    assert joined_groups >= 5 and found >= 20 and missed >= 1000  # both answers were checked


@pytest.mark.parametrize("patterns", [
    [re.compile(r"a"), re.compile(r"b", re.IGNORECASE)],  # different flags
    [re.compile(r"a  # a comment", re.VERBOSE)],
    [re.compile(r"(a)\1")],  # a backreference: numbers shift when joined
    [re.compile(r"(?P<x>a)(?P=x)")],
    [re.compile(r"(?P<x>a)")],  # named groups: two of one name would not compile
    [re.compile(r"(a)?(?(1)b|c)")],  # a conditional
    [re.compile(r"(?i)a")],  # an inline global flag
    [],
])
def test_what_cannot_be_joined_exactly_is_not(patterns: list[re.Pattern[str]]) -> None:
    assert union(patterns) is None
    for text in ("aa", "ab", "c", "A", "zzz"):
        assert any_found(patterns, None, text) == any(p.search(text) for p in patterns)


def test_unnamed_groups_lookarounds_and_anchors_join() -> None:
    patterns = [re.compile(r"(?<!\w)(?:за|for)\s+(\d+)\b", re.IGNORECASE),
                re.compile(r"^итого", re.IGNORECASE), re.compile(r"x(?=y)", re.IGNORECASE)]
    joined = union(patterns)
    assert joined is not None
    for text in ("for 3 hours", "bfor 3", "Итого 5", "всего итого", "xy", "xz", ""):
        assert (joined.search(text) is not None) == any(p.search(text) for p in patterns)
