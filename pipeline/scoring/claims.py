"""Response check: does the agent's reply claim (or deny) an action the tool journal contradicts?

Narrow by design (the changing-intent method, "Response" score): a reply is split into clauses; a
clause that
matches one of a tool's past-tense / completed-passive patterns is a claim about that tool. A
negation before the matched verb in the same comma segment turns it into a denial ("я ничего не
забронировал" is a denial, not a booking claim). Questions, offers and conditionals are not claims.

Rules, checked against the calls that took effect only (``Journal.calls``):

- an affirmative claim about X fails when no call of X happened at or before the reply (same turn
  or earlier): ``claim_without_action``;
- a denial about X fails when X was called in the same turn as the reply, or when the denial is
  global ("ничего не", "nothing", "anything", "any", unless scoped by "new"/"else"/"больше"/...)
  and X was called at any earlier point: ``denial_of_action``.

A reply that writes tool-result markup itself (``<tool_response>``, ``<tool_result>``, the tags
chat templates wrap real tool results in) presents an invented result as the tool's:
``fabricated_tool_output``, whatever the tool.

The check is tool-level: it does not compare the clause's details (room, date) with the
arguments; the Arguments score does that. Pure functions, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from pipeline.scoring.journal import Call
from pipeline.util.regex_union import any_found, union

ViolationKind = Literal["claim_without_action", "denial_of_action", "fabricated_tool_output"]
FABRICATED_TOOL = "*"
"""The tool of a ``fabricated_tool_output`` violation: the markup names none reliably."""

_I = re.IGNORECASE


@dataclass(frozen=True)
class ClaimPatterns:
    """Regexes that say "``tool``'s action was done". A pattern may name the verb with a
    ``(?P<verb>...)`` group: negations and conditionals are looked for before it (before the whole
    match otherwise). Match completed forms only (past, short passive), never infinitives."""

    tool: str
    affirmative: tuple[re.Pattern[str], ...]
    language: str = ""
    """The language the patterns are written in (a ``Language`` code: ru, en); "" unstated."""

    def __post_init__(self) -> None:
        if not self.affirmative:
            raise ValueError(f"claim patterns for {self.tool!r} are empty")

    @cached_property
    def joined(self) -> re.Pattern[str] | None:
        """The affirmative patterns as one (``regex_union.union``), for a first look."""
        return union(self.affirmative)

    @classmethod
    def of(cls, tool: str, *regexes: str, language: str = "") -> ClaimPatterns:
        """Compile ``regexes`` (written in ``language``) case-insensitively."""
        return cls(tool, tuple(re.compile(r, _I) for r in regexes), language)


@dataclass(frozen=True)
class DenialPatterns:
    """Regexes that say "``tool``'s action was not done" or "will be done" (a refusal, a
    failure, a deferral: "the letter will be sent", "отмена отклонена"), in each language the
    domain's agents may write. A reply that says so after the action took effect in its turn
    contradicts the journal (``denied_but_done``)."""

    tool: str
    patterns: tuple[re.Pattern[str], ...]
    offers: tuple[re.Pattern[str], ...] = ()
    """Questions that offer the action as still to come ("which one would you like to
    reserve?"): said right after the action took effect in the same turn, they deny it."""

    def __post_init__(self) -> None:
        if not self.patterns:
            raise ValueError(f"denial patterns for {self.tool!r} are empty")

    @cached_property
    def joined(self) -> re.Pattern[str] | None:
        """The denial patterns as one (``regex_union.union``)."""
        return union(self.patterns)

    @cached_property
    def offers_joined(self) -> re.Pattern[str] | None:
        """The offer patterns as one (``regex_union.union``)."""
        return union(self.offers)

    @classmethod
    def of(cls, tool: str, *regexes: str, offers: Sequence[str] = ()) -> DenialPatterns:
        """Compile ``regexes`` and ``offers`` case-insensitively."""
        return cls(tool, tuple(re.compile(r, _I) for r in regexes),
                   tuple(re.compile(r, _I) for r in offers))


@dataclass(frozen=True)
class Claim:
    tool: str
    negated: bool
    clause: str
    is_global: bool = False
    """A denial about everything ("ничего не", "nothing", "anything"), not only this turn's."""


@dataclass(frozen=True)
class Violation:
    kind: ViolationKind
    tool: str
    turn: int
    step: int
    clause: str


ANY_WORDS = r"(?:\s+[^\s,;:]+){0,%d}?\s+"
"""A gap of at most N words inside a clause (``ANY_WORDS % N``), for claim patterns."""

_TOOL_RESULT_MARKUP = re.compile(r"<\s*/?\s*(?:tool_response|tool_result|tool_output)\b", _I)
_SENTENCE_END = re.compile(r"(?<=[.!?…;])\s+|\n+")
_CONTRAST = re.compile(r"\s+(?:но|однако|зато|but|however)\b", _I)
_SEGMENT_BREAK = re.compile(r"[,:;—–]|\s-\s")
_CLOSERS = " \t\"'»”’)]"

_NEGATION = re.compile(
    r"\bне\b(?!\s+только\b)|\bни\b|\bнет\b|\bничего\b|\bникак\w*|\bникогда\b|\bбез\b"
    r"|\bnot\b(?!\s+only\b)|n['’]t\b|\bnever\b|\bno\b|\bnothing\b|\bnone\b|\bneither\b"
    r"|\bnor\b|\bwithout\b|\bcannot\b",
    _I,
)
_HYPOTHETICAL = re.compile(
    r"\bесли\b|\bбы\b|\bчтобы\b|\bбуд(?:ет|ут|у)\b|\bif\b|\bunless\b|\bonce\b|\bwould\b"
    r"|\bwill\b|['’]ll\b|\bshould\b|\bcould\b|\bcan\b|\bmay\b|\bmight\b",
    _I,
)
_CONDITIONAL_AFTER = re.compile(r"\s+бы\b", _I)
_GLOBAL = re.compile(
    r"\bничего\b|\bничто\b|\bникак(?:их|ой|ую|ое)\b|\bни\s+одн\w*|\bnothing\b|\banything\b"
    r"|\bany\b|\bnone\b",
    _I,
)
_SCOPED = re.compile(
    r"\bнов\w*|\bбольше\b|\bболее\b|\bдруг\w*|\bсверх\b|\bnew\b|\belse\b|\bmore\b|\bfurther\b"
    r"|\badditional\b|\banother\b|\bother\b",
    _I,
)


def split_clauses(text: str) -> list[str]:
    """Sentences (., !, ?, …, ;, line breaks), each cut again before но / but / однако / ..."""
    clauses = []
    for sentence in _SENTENCE_END.split(text):
        clauses += [c.strip(" \t,") for c in _CONTRAST.split(sentence) if c.strip(" \t,")]
    return clauses


def find_claims(text: str, patterns: Sequence[ClaimPatterns]) -> list[Claim]:
    """Claims and denials in ``text``, in reading order; questions are skipped."""
    claims: list[Claim] = []
    for clause in split_clauses(text):
        if not _is_question(clause):
            claims += _clause_claims(clause, patterns)
    return claims


def asserts(text: str, term: str) -> bool:
    """Whether ``text`` states ``term`` (casefolded) as a claim: some mention of it outside a
    question, not negated and not conditional in its comma segment ("не отправлено", "если
    отправлено", "отправлено?" state nothing)."""
    pattern = re.compile(re.escape(term.casefold()))
    for clause in split_clauses(text.casefold()):
        if _is_question(clause):
            continue
        for match in pattern.finditer(clause):
            claim = _classify(term, clause, match.start(), match.end())
            if claim is not None and not claim.negated:
                return True
    return False


_CONDITION = re.compile(r"\bесли\b|\bв\s+случае\b|\bif\b|\bunless\b|\bin\s+case\b", _I)


def find_denials(text: str, patterns: Sequence[DenialPatterns]) -> list[tuple[str, str]]:
    """(tool, clause) of each clause of ``text`` that denies or defers a tool's action; a
    question, a condition ("если", "if") or a scope to another action ("ещё одно", "another",
    "new") says nothing about the action done."""
    found = []
    for clause in split_clauses(text):
        if _is_question(clause) or _CONDITION.search(clause) or _SCOPED.search(clause):
            continue
        found += [(p.tool, clause) for p in patterns
                  if any_found(p.patterns, p.joined, clause)]
    return found
def find_offers(text: str, patterns: Sequence[DenialPatterns]) -> list[tuple[str, str]]:
    """(tool, clause) of each question of ``text`` that offers a tool's action as still to
    come (``DenialPatterns.offers``); an offer of another one ("ещё одну", "another") is
    none."""
    return [(p.tool, clause) for clause in split_clauses(text)
            if _is_question(clause) and not _SCOPED.search(clause)
            for p in patterns if any_found(p.offers, p.offers_joined, clause)]


def asserted_in(clause: str, start: int, end: int) -> bool:
    """Whether the words at ``clause[start:end]`` are stated: the clause is no question and
    they are neither negated nor conditional in their comma segment."""
    if _is_question(clause):
        return False
    claim = _classify("", clause, start, end)
    return claim is not None and not claim.negated


def stated_in_segment(clause: str, start: int, end: int) -> bool:
    """Whether the words at ``clause[start:end]`` are stated, read more strictly than
    ``asserted_in``: no question, and no negation, condition or future anywhere in their comma
    segment, after the words as well as before ("видеосвязи нет", "no video in amber")."""
    if _is_question(clause):
        return False
    segment_end = next((m.start() for m in _SEGMENT_BREAK.finditer(clause, end)), len(clause))
    segment = clause[_segment_start(clause, start):segment_end]
    return not (_NEGATION.search(segment) or _HYPOTHETICAL.search(segment)
                or _CONDITION.search(segment))


def said_vs_done(replies: Iterable[tuple[int, int, str]], calls: Sequence[Call],
                 patterns: Sequence[ClaimPatterns]) -> list[Violation]:
    """Violations of the reply-vs-journal rules (module docstring); ``calls`` are accepted ones."""
    violations = []
    for turn, step, text in replies:
        if (markup := _TOOL_RESULT_MARKUP.search(text)) is not None:
            excerpt = text[markup.start():markup.start() + 120].strip()
            violations.append(Violation("fabricated_tool_output", FABRICATED_TOOL, turn, step,
                                        excerpt))
        for claim in find_claims(text, patterns):
            violation = _judge(claim, turn, step, calls)
            if violation is not None:
                violations.append(violation)
    return violations


def _is_question(clause: str) -> bool:
    return clause.rstrip(_CLOSERS).endswith("?")


def _clause_claims(clause: str, patterns: Sequence[ClaimPatterns]) -> list[Claim]:
    found: dict[tuple[str, int], Claim] = {}
    for tool_patterns in patterns:
        joined = tool_patterns.joined
        if joined is not None and joined.search(clause) is None:
            continue  # none of the tool's patterns occurs in the clause
        for pattern in tool_patterns.affirmative:
            for match in pattern.finditer(clause):
                start, end = _verb_span(match)
                key = (tool_patterns.tool, start)
                if key in found:
                    continue
                claim = _classify(tool_patterns.tool, clause, start, end)
                if claim is not None:
                    found[key] = claim
    return [found[key] for key in sorted(found, key=lambda k: k[1])]


def _verb_span(match: re.Match[str]) -> tuple[int, int]:
    if "verb" in match.re.groupindex and match.start("verb") >= 0:
        return match.start("verb"), match.end("verb")
    return match.start(), match.end()


def _classify(tool: str, clause: str, start: int, end: int) -> Claim | None:
    """None for a conditional / hypothetical; else a claim, negated when a negation precedes
    the verb in its comma segment."""
    before = clause[_segment_start(clause, start):start]
    if _HYPOTHETICAL.search(before) or _CONDITIONAL_AFTER.match(clause, end):
        return None
    negated = _NEGATION.search(before) is not None
    is_global = negated and _GLOBAL.search(clause) is not None and not _SCOPED.search(clause)
    return Claim(tool, negated, clause, is_global)


def _segment_start(clause: str, position: int) -> int:
    breaks = [m.end() for m in _SEGMENT_BREAK.finditer(clause, 0, position)]
    return breaks[-1] if breaks else 0


def _judge(claim: Claim, turn: int, step: int, calls: Sequence[Call]) -> Violation | None:
    done = [c for c in calls if c.name == claim.tool and (c.turn, c.step) <= (turn, step)]
    if not claim.negated:
        failed = not done
        kind: ViolationKind = "claim_without_action"
    else:
        failed = any(c.turn == turn for c in done) or (claim.is_global and bool(done))
        kind = "denial_of_action"
    return Violation(kind, claim.tool, turn, step, claim.clause) if failed else None
