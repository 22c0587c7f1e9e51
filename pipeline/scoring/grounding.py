"""Replies grounded in what the tools said: the entities a reply names and what it states about
them, read as facts and compared with the tool results.

A domain declares its entities (``pipeline.scoring.entities``). A reply is read block by block
(a line and the indented lines under it: a list item with its details) and clause by clause:
the entities it names (by the name a tool result gave, an alias, or a ``mention`` pattern that
captures a name used as an entity's) and the attribute values it states (a feature, a price).
A value belongs to the entity named last before it in its clause, else to those named in its
comma segment, else, on an indented line, to the entity its block's first line names; a value
that is negated, conditional or asked about states nothing. A JSON object a reply writes (text
between braces) that names one entity holds that entity's values, wherever its name stands. A
block that names no entity, whose first line is a bare title ("1. **Матрица 10x10**") and
whose indented lines state attributes, names an entity by that title.

Two checks read these facts:

- ``grounding@<turn>``: every entity the reply names was introduced by a tool result or a user
  turn before it, and every value it states agrees with the latest tool result about that
  entity (a room "with" a feature it lacks, a wrong price fail);
- ``claim:forbids:<attribute>=<value>@<turn>``: the reply gives no entity (whichever, invented
  ones included) the value a scenario forbids ("a room suits a confidential meeting", said as a
  sentence or as one more item of a feature list).

Pure functions, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.catalog import Domain
from pipeline.catalog.models import ForbiddenClaim
from pipeline.scoring.claims import split_clauses, stated_in_segment
from pipeline.scoring.entities import Attribute, EntityKind
from pipeline.scoring.journal import Journal, Reply
from pipeline.scoring.results import CheckResult
from pipeline.trace import Event, ToolResult, UserMessage

_I = re.IGNORECASE
_BRACES = re.compile(r"[{}]")
_SEGMENT_BREAK = re.compile(r"[,:;—–()]|\s-\s")
_TITLE = re.compile(r"^(?:\d+[.)]|[-*•]|#{1,6})\s*(?:\*\*)?(?P<title>[A-ZА-ЯЁ][^:*\n]{0,40}?)"
                    r"(?:\*\*)?\s*:?\s*$")
MAX_TITLE_WORDS = 3
MIN_USER_WORD = 3
"""A shorter word in a user turn ("a", "я") introduces no name unless used as one."""
MAX_REPORTED = 3
"""Problems a failed check's detail names (the rest are counted)."""


@dataclass(frozen=True)
class Record:
    tool: str
    item: Mapping[str, Any]


@dataclass(frozen=True)
class Introduced:
    """What the dialog has introduced before a reply: the tools' entities by name (casefolded),
    each with the latest result item about it, and the user's words."""

    records: Mapping[str, Record]
    user_text: str
    user_names: frozenset[str] = frozenset()
    """Names the user's turns use as an entity's (the kind's ``mention`` patterns), casefolded."""

    def by_user(self, name: str) -> bool:
        """The user used ``name``: as an entity's name, or (three letters or more) anywhere."""
        folded = name.casefold()
        return folded in self.user_names or (
            len(folded) >= MIN_USER_WORD and re.search(
                rf"(?<!\w){re.escape(folded)}(?!\w)", self.user_text) is not None)


@dataclass(frozen=True)
class Mention:
    start: int
    end: int
    written: str
    key: str | None
    """The tools' name (casefolded) it resolves to; None for a name only the user used, or an
    invented one."""
    invented: bool


@dataclass(frozen=True)
class Claim:
    entity: str
    key: str | None
    attribute: str
    value: str | float
    clause: str


@dataclass(frozen=True)
class Reading:
    mentions: tuple[Mention, ...]
    claims: tuple[Claim, ...]

    @property
    def invented(self) -> list[str]:
        return list(dict.fromkeys(m.written for m in self.mentions if m.invented))


@dataclass(frozen=True)
class _Result:
    """One tool result's entities of a kind: its place, its tool, and each item by name."""

    turn: int
    step: int
    tool: str
    items: tuple[tuple[str, Mapping[str, Any]], ...]
    """(name casefolded, item), in the result's order."""


@dataclass(frozen=True)
class Sightings:
    """What a dialog's events say about one kind of entity, read once for all its replies: the
    entities each tool result gave (refusals give none) and each user turn's text."""

    kind: EntityKind
    results: tuple[_Result, ...]
    user: tuple[tuple[int, str], ...]
    """(turn, text) of each user turn, in order."""

    @classmethod
    def of(cls, events: Sequence[Event], kind: EntityKind) -> Sightings:
        results: list[_Result] = []
        user: list[tuple[int, str]] = []
        for event in events:
            if isinstance(event, UserMessage):
                user.append((event.turn, event.content or ""))
            elif isinstance(event, ToolResult) and event.tool_error is None:
                source = kind.source(event.tool_name)
                if source is not None:
                    results.append(_Result(event.turn, event.step, event.tool_name, tuple(
                        (str(item[source.key]).casefold(), item)
                        for item in source.read(event.result))))
        return cls(kind, tuple(results), tuple(user))

    def before(self, turn: int, step: int) -> Introduced:
        """The entities tool results gave before (``turn``, ``step``), the latest item
        winning, and the user's turns up to ``turn``."""
        records: dict[str, Record] = {}
        for result in self.results:
            if (result.turn, result.step) < (turn, step):
                for name, item in result.items:
                    records[name] = Record(result.tool, item)
        user = [text for number, text in self.user if number <= turn]
        names = frozenset(match.group("name").casefold() for text in user
                          for pattern in self.kind.mention for match in pattern.finditer(text))
        return Introduced(records, " ".join(user).casefold(), names)


def introduced_before(events: Sequence[Event], kind: EntityKind, turn: int,
                      step: int) -> Introduced:
    """The entities of ``kind`` tool results gave before (``turn``, ``step``) (refusals give
    none), the latest item winning, and the user's turns up to ``turn``."""
    return Sightings.of(events, kind).before(turn, step)


def read_reply(text: str, kind: EntityKind, introduced: Introduced) -> Reading:
    """The entities of ``kind`` a reply names and the values it states about them."""
    mentions: list[Mention] = []
    claims: list[Claim] = []
    names = _names(kind, introduced)
    for block in _blocks(text):
        owner: Mention | None = None
        named = len(mentions)
        for index, line in enumerate(block):
            for piece, clauses, found in _pieces(line, kind, introduced, names):
                mentions += [m for each in found for m in each]
                if index == 0 and owner is None and mentions[named:]:
                    owner = mentions[named]
                fallback = piece or (owner if index > 0 else None)
                for clause, here in zip(clauses, found, strict=True):
                    claims += _claims(clause, kind, here, fallback)
        if len(mentions) == named and len(block) > 1:
            titled = _titled(block, kind)
            if titled is not None:
                mentions.append(titled[0])
                claims += titled[1]
    return Reading(tuple(mentions), tuple(claims))


def _clauses(line: str) -> list[str]:
    return [clause for piece in _BRACES.split(line) for clause in split_clauses(piece)]


_Piece = tuple[Mention | None, list[str], list[list[Mention]]]


def _pieces(line: str, kind: EntityKind, introduced: Introduced,
            names: _Names) -> Iterator[_Piece]:
    """A line cut at its braces, each piece with its clauses and their mentions: a JSON object
    a reply writes names one entity, whose values are all its own (before its name or after),
    never the object's before it; that entity comes first."""
    braced = _BRACES.search(line) is not None
    for text in _BRACES.split(line):
        clauses = split_clauses(text)
        found = [_mentions(clause, kind, introduced, names) for clause in clauses]
        named = {m.written.casefold(): m for each in found for m in each}
        yield (next(iter(named.values())) if braced and len(named) == 1 else None,
               clauses, found)


def _blocks(text: str) -> Iterator[list[str]]:
    """Lines grouped: a line starting at the margin and the indented lines under it."""
    block: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if block and not line[:1].isspace():
            yield block
            block = []
        block.append(line.strip())
    if block:
        yield block


def _titled(block: list[str], kind: EntityKind) -> tuple[Mention, list[Claim]] | None:
    """A block titled by a bare name whose indented lines state attributes, and no entity named
    in it: the title names an entity no result gave."""
    match = _TITLE.match(block[0])
    if match is None or len(match.group("title").split()) > MAX_TITLE_WORDS:
        return None
    title = match.group("title").strip()
    if title.casefold() in kind.not_names:
        return None
    mention = Mention(0, 0, title, None, True)
    claims = [claim for line in block[1:] for clause in _clauses(line)
              for claim in _claims(clause, kind, [], mention)]
    return (mention, claims) if claims else None


_Names = tuple[tuple[str, tuple[re.Pattern[str], ...]], ...]
"""Every name a reply may use (the tools' and the aliases'), sorted, with its patterns."""


def _names(kind: EntityKind, introduced: Introduced) -> _Names:
    return tuple((name, (re.compile(rf"(?<!\w){re.escape(name)}(?!\w)", _I),
                         *kind.aliases.get(name, ())))
                 for name in sorted(set(introduced.records) | set(kind.aliases)))


def _mentions(clause: str, kind: EntityKind, introduced: Introduced,
              names: _Names) -> list[Mention]:
    found: list[Mention] = []
    for name, patterns in names:
        for pattern in patterns:
            for match in pattern.finditer(clause):
                if any(m.start < match.end() and match.start() < m.end for m in found):
                    continue
                known = name in introduced.records or introduced.by_user(match.group(0))
                found.append(Mention(match.start(), match.end(), match.group(0),
                                     name if name in introduced.records else None, not known))
    for pattern in kind.mention:
        for match in pattern.finditer(clause):
            start, end = match.span("name")
            if any(m.start < end and start < m.end for m in found):
                continue
            written = match.group("name")
            if written.casefold() in kind.not_names:
                continue
            found.append(Mention(start, end, written, None, not introduced.by_user(written)))
    return sorted(found, key=lambda m: m.start)


def _values(clause: str, attribute: Attribute) -> Iterator[tuple[int, int, str | float]]:
    if attribute.kind != "number":
        joined = attribute.values_joined
        if joined is not None and joined.search(clause) is None:
            return  # no value is said in the clause
        for pattern, name in attribute.value_patterns:
            for match in pattern.finditer(clause):
                yield match.start(), match.end(), name
        return
    for pattern in attribute.number_patterns:
        for match in pattern.finditer(clause):
            digits = re.sub(r"[^\d.]", "", match.group("value").replace(",", ""))
            if digits:
                yield match.start("value"), match.end(), float(digits)


def _claims(clause: str, kind: EntityKind, mentions: Sequence[Mention],
            owner: Mention | None) -> list[Claim]:
    claims: list[Claim] = []
    taken: list[tuple[int, int]] = []
    for attribute in kind.attributes:
        for start, end, value in sorted(_values(clause, attribute), key=lambda v: v[0] - v[1]):
            if (any(s < end and start < e for s, e in taken)
                    or any(m.start < end and start < m.end for m in mentions)
                    or not stated_in_segment(clause, start, end)):
                continue
            taken.append((start, end))
            for entity in _owners(clause, start, mentions, owner):
                claims.append(Claim(entity.written, entity.key, attribute.name, value, clause))
    return claims


def _owners(clause: str, start: int, mentions: Sequence[Mention],
            owner: Mention | None) -> list[Mention]:
    """Who a value at ``start`` is said of (module docstring)."""
    before = [m for m in mentions if m.end <= start]
    if before:
        return [before[-1]]
    breaks = [m.end() for m in _SEGMENT_BREAK.finditer(clause, 0, start)]
    segment_end = next((m.start() for m in _SEGMENT_BREAK.finditer(clause, start)),
                       len(clause))
    inside = [m for m in mentions if (breaks[-1] if breaks else 0) <= m.start < segment_end]
    return inside or ([owner] if owner is not None else [])


def contradiction(claim: Claim, kind: EntityKind, introduced: Introduced) -> str | None:
    """What the latest tool result says against ``claim`` (None: nothing, or it agrees)."""
    record = introduced.records.get(claim.key or "")
    attribute = kind.attribute(claim.attribute)
    if record is None or attribute is None or attribute.result_field not in record.item:
        return None
    actual = record.item[attribute.result_field]
    value = attribute.value(str(claim.value))
    named = value.names() if value is not None else {str(claim.value).casefold()}
    if attribute.kind == "members":
        members = [str(v).casefold() for v in actual] if isinstance(actual, list) else []
        agrees = bool(named & set(members))
    elif attribute.kind == "one":
        agrees = str(actual).casefold() in named
    else:
        agrees = isinstance(actual, int | float) and float(actual) == claim.value
    if agrees:
        return None
    return (f"{claim.entity} {claim.attribute}={_shown(claim.value)}: {record.tool} gave "
            f"{attribute.result_field}={actual!r}")


def _shown(value: str | float) -> str:
    return f"{value:g}" if isinstance(value, float) else value


def grounding_checks(journal: Journal, domain: Domain) -> list[CheckResult]:
    """``grounding@<turn>`` for every reply of a domain that declares entities."""
    kinds: tuple[EntityKind, ...] = domain.entities
    if not kinds:
        return []
    sightings = [Sightings.of(journal.events, kind) for kind in kinds]
    return [_grounding(reply, sightings) for reply in journal.final_replies()]


def _grounding(reply: Reply, sightings: Sequence[Sightings]) -> CheckResult:
    problems: list[str] = []
    mentioned = stated = 0
    for seen in sightings:
        kind = seen.kind
        introduced = seen.before(reply.turn, reply.step)
        reading = read_reply(reply.text, kind, introduced)
        mentioned += len(reading.mentions)
        stated += len(reading.claims)
        problems += [f"{kind.name} {name!r} that no tool result or user turn introduced"
                     for name in reading.invented]
        problems += [c for claim in reading.claims
                     if (c := contradiction(claim, kind, introduced)) is not None]
    ok = not problems
    check_id = f"grounding@{reply.turn}"
    if ok:
        return CheckResult(check_id, "grounding", True, None, None,
                           f"{mentioned} mention(s), {stated} stated value(s) agree with the "
                           "tools", "response")
    more = f" (+{len(problems) - MAX_REPORTED} more)" if len(problems) > MAX_REPORTED else ""
    return CheckResult(check_id, "grounding", False, reply.turn, reply.step,
                       "; ".join(problems[:MAX_REPORTED]) + more, "response")


def forbidden_claim_checks(turn_no: int, rules: Sequence[ForbiddenClaim], reply: Reply | None,
                           journal: Journal, domain: Domain) -> list[CheckResult]:
    """``claim:forbids:...@<turn>``: the reply gives no entity a value the turn forbids."""
    if not rules:
        return []
    kinds: tuple[EntityKind, ...] = domain.entities
    claims = _claims_of(reply, journal, kinds) if reply is not None else []
    results = []
    for rule in rules:
        _declared(rule, kinds, domain.name)
        check_id = f"claim:forbids:{rule.attribute}={rule.value}@{turn_no}"
        hit = next((c for c in claims if _breaks(c, rule)), None)
        if hit is None:
            results.append(CheckResult(check_id, "forbidden_claim", True, None, None,
                                       f"no entity given {rule.attribute}={rule.value}",
                                       "response"))
            continue
        results.append(CheckResult(check_id, "forbidden_claim", False, turn_no,
                                   reply.step if reply is not None else None,
                                   f"reply gives {hit.entity} {rule.attribute}={rule.value}: "
                                   f"{hit.clause[:160]!r}", "response"))
    return results


def _claims_of(reply: Reply, journal: Journal, kinds: Sequence[EntityKind]) -> list[Claim]:
    return [claim for kind in kinds
            for claim in read_reply(reply.text, kind, introduced_before(
                journal.events, kind, reply.turn, reply.step)).claims]


def _breaks(claim: Claim, rule: ForbiddenClaim) -> bool:
    value = (_number(rule.value) if isinstance(claim.value, float)
             else rule.value.casefold())
    return (claim.attribute == rule.attribute
            and (claim.value.casefold() if isinstance(claim.value, str) else claim.value)
            == value
            and (rule.entity is None or (claim.key or claim.entity.casefold())
                 == rule.entity.casefold()))


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _declared(rule: ForbiddenClaim, kinds: Sequence[EntityKind], domain: str) -> None:
    """A rule names an attribute value the domain declares (a ValueError otherwise: the
    scenario asks for what no reading can find)."""
    for kind in kinds:
        attribute = kind.attribute(rule.attribute)
        if attribute is not None and (attribute.kind == "number"
                                      or attribute.value(rule.value) is not None):
            return
    raise ValueError(f"forbidden claim {rule.attribute}={rule.value}: domain {domain} declares "
                     "no such attribute value (its entities.py)")
