"""A domain's entities as its tools report them, declared for the grounding check.

A domain declares each kind of entity its replies talk about (``EntityKind``: a room, an order)
in its own ``entities.py`` (``ENTITIES``): which tool results hold them (``ResultItems``: the
tool, the list inside its JSON result, the field that names an item), how a reply names one
(the names the tools give, aliases in each language, and ``mention`` patterns that capture a
name used as an entity's: "комната «Берёшка»", "Room A"), and the attributes a reply may state
about one (``Attribute``: a set of values such as features, or a number such as a price), each
value said in every language the domain speaks. This module holds only the shapes; the words
live in the catalogs, the reading in ``pipeline.scoring.grounding``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from pipeline.util.regex_union import union

AttributeKind = Literal["members", "one", "number"]
"""``members``: the item's field is a list and a reply claims one member ("with video");
``one``: the field holds one of the values ("cancelled"); ``number``: the field is a number
and a reply states it ("8 seats", "2200 ₽")."""

_I = re.IGNORECASE


def _compiled(by_language: Mapping[str, Sequence[str]], flags: int = _I
              ) -> dict[str, tuple[re.Pattern[str], ...]]:
    return {code: tuple(re.compile(p, flags) for p in regexes)
            for code, regexes in by_language.items()}


def _every(patterns: Mapping[str, tuple[re.Pattern[str], ...]]) -> tuple[re.Pattern[str], ...]:
    return tuple(p for group in patterns.values() for p in group)


@dataclass(frozen=True)
class Value:
    """One value of a ``members`` attribute: ``name`` as the tools write it (or, for a value no
    tool ever reports, such as "soundproofing", the name a scenario's forbidden claim uses),
    and how each language says it."""

    name: str
    patterns: Mapping[str, tuple[re.Pattern[str], ...]] = field(default_factory=dict)
    covers: tuple[str, ...] = ()
    """Other result values this one names too ("pending" covers "pending (item modified)")."""

    @classmethod
    def of(cls, name: str, covers: Sequence[str] = (), **by_language: Sequence[str]) -> Value:
        return cls(name, _compiled(by_language), tuple(covers))

    def names(self) -> set[str]:
        """Every result value it names, casefolded."""
        return {n.casefold() for n in (self.name, *self.covers)}

    def all_patterns(self) -> tuple[re.Pattern[str], ...]:
        return self._flat

    @cached_property
    def _flat(self) -> tuple[re.Pattern[str], ...]:
        return _every(self.patterns)


@dataclass(frozen=True)
class Attribute:
    """What a reply may state about an entity, and the result field that says the truth."""

    name: str
    kind: AttributeKind
    result_field: str
    """The item's field in the tool result."""
    values: tuple[Value, ...] = ()
    """A ``members`` or ``one`` attribute's vocabulary."""
    patterns: Mapping[str, tuple[re.Pattern[str], ...]] = field(default_factory=dict)
    """A ``number`` attribute's statements, each with a ``(?P<value>...)`` group."""

    @classmethod
    def members(cls, name: str, result_field: str, values: Sequence[Value]) -> Attribute:
        return cls(name, "members", result_field, tuple(values))

    @classmethod
    def one(cls, name: str, result_field: str, values: Sequence[Value]) -> Attribute:
        return cls(name, "one", result_field, tuple(values))

    @classmethod
    def number(cls, name: str, result_field: str, **by_language: Sequence[str]) -> Attribute:
        compiled = _compiled(by_language)
        for pattern in _every(compiled):
            if "value" not in pattern.groupindex:
                raise ValueError(f"attribute {name!r}: {pattern.pattern!r} has no (?P<value>)")
        return cls(name, "number", result_field, patterns=compiled)

    def value(self, name: str) -> Value | None:
        return next((v for v in self.values if v.name == name), None)

    @cached_property
    def value_patterns(self) -> tuple[tuple[re.Pattern[str], str], ...]:
        """Every pattern of every value with the value's name, values in order (made once)."""
        return tuple((pattern, value.name) for value in self.values
                     for pattern in value.all_patterns())

    @cached_property
    def values_joined(self) -> re.Pattern[str] | None:
        """Every value's patterns as one (``regex_union.union``), for a first look."""
        return union([pattern for pattern, _ in self.value_patterns])

    @cached_property
    def number_patterns(self) -> tuple[re.Pattern[str], ...]:
        """A ``number`` attribute's statements, every language's in order (made once)."""
        return _every(self.patterns)


@dataclass(frozen=True)
class ResultItems:
    """Where a tool's result lists entities: ``items`` is the dotted path to the list in the
    result's JSON ("" for a result that is one item), ``key`` the field naming each."""

    tool: str
    items: str
    key: str

    def read(self, result: str | None) -> Iterator[Mapping[str, Any]]:
        """The items of one result (nothing when it is not JSON or lacks the path)."""
        try:
            node: Any = json.loads(result or "")
        except json.JSONDecodeError:
            return
        for part in (self.items.split(".") if self.items else []):
            node = node.get(part) if isinstance(node, dict) else None
        for item in node if isinstance(node, list) else [node]:
            if isinstance(item, dict) and isinstance(item.get(self.key), str | int):
                yield item


@dataclass(frozen=True)
class EntityKind:
    """One kind of entity a domain's replies name, and how to read them."""

    name: str
    sources: tuple[ResultItems, ...]
    attributes: tuple[Attribute, ...] = ()
    aliases: Mapping[str, tuple[re.Pattern[str], ...]] = field(default_factory=dict)
    """An entity's name as the tools write it -> other ways a reply names it (any language)."""
    mention: tuple[re.Pattern[str], ...] = ()
    """Patterns that capture a name used as this kind's (``(?P<name>...)``): a name they catch
    that no tool result or user turn introduced is an invented entity. Case-sensitive: write
    ``(?i:...)`` around the words that may take any case."""
    not_names: frozenset[str] = frozenset()
    """Words a ``mention`` pattern may catch that name nothing ("Capacity" in "Room Capacity")."""

    @classmethod
    def of(cls, name: str, sources: Sequence[ResultItems], attributes: Sequence[Attribute] = (),
           aliases: Mapping[str, Sequence[str]] | None = None, mention: Sequence[str] = (),
           not_names: Sequence[str] = ()) -> EntityKind:
        for regex in mention:
            if "name" not in re.compile(regex).groupindex:
                raise ValueError(f"entity {name!r}: mention {regex!r} has no (?P<name>)")
        return cls(name, tuple(sources), tuple(attributes),
                   {key: tuple(re.compile(r, _I) for r in regexes)
                    for key, regexes in (aliases or {}).items()},
                   tuple(re.compile(r) for r in mention),
                   frozenset(n.casefold() for n in not_names))

    def attribute(self, name: str) -> Attribute | None:
        return next((a for a in self.attributes if a.name == name), None)

    def source(self, tool: str) -> ResultItems | None:
        return next((s for s in self.sources if s.tool == tool), None)
