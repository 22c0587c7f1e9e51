"""Lint of a scenario suite's golden states: a field the state check compares must be one the
agent was told about.

In structured mode the memory model writes the state from the agent's prompt, the tools and the
domain's state schema. A golden state field whose meaning none of them states (a ``sort_by``
and ``limit`` that encode "the cheapest", say) tests a convention the agent was never told, and
a correct agent fails it. A field is *told* when the state schema gives it a ``description``,
or when its name appears as a word in a prompt of the domain or in what a tool says of itself
(its name, its description, its parameters' names and descriptions). A field's name in the
schema's list of properties alone is not enough: that says the field exists, not when a value
is right.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pipeline.catalog.domains import Domain, load_domain
from pipeline.catalog.loader import Suite
from pipeline.catalog.state_paths import state_leaves


@dataclass(frozen=True)
class StateFinding:
    suite: str
    line: int
    scenario_id: str
    turn: int
    path: str

    def message(self) -> str:
        name = self.path.rsplit(".", 1)[-1]
        return (f"{self.suite}:{self.line}: turns[{self.turn - 1}].state.{self.path}: no prompt, "
                f"no tool description and no description in the state schema mentions "
                f"{name!r}: the golden demands a convention the agent was not told")


def _texts(value: Any) -> Iterator[str]:
    """Every ``description`` and every property name inside a JSON Schema."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if key == "description" and isinstance(item, str):
                yield item
            elif key == "properties" and isinstance(item, Mapping):
                yield from (str(name) for name in item)
                yield from _texts(item)
            else:
                yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)


def told_text(domain: Domain) -> str:
    """What the agent reads about the domain: its prompts and its tools."""
    parts = [domain.prompt(name).text for name in domain.prompt_names()]
    for tool in domain.tools:
        parts += [tool.name, tool.description, *_texts(tool.parameters)]
    return "\n".join(parts)


def described(schema: Mapping[str, Any] | None, path: str) -> bool:
    """Whether the state schema gives the field at ``path`` a description."""
    node: Any = schema
    for part in path.split("."):
        properties = node.get("properties") if isinstance(node, Mapping) else None
        if not isinstance(properties, Mapping) or part not in properties:
            return False
        node = properties[part]
    return isinstance(node, Mapping) and bool(node.get("description"))


def mentions(text: str, name: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.IGNORECASE) is not None


def lint_states(suite: Suite) -> list[StateFinding]:
    """Every golden state field (first turn that has it, per scenario) the agent was not
    told about."""
    findings: list[StateFinding] = []
    for loaded in suite.scenarios:
        scenario = loaded.scenario
        if not any(turn.state for turn in scenario.turns):
            continue
        domain = load_domain(scenario.domain)
        text, seen = told_text(domain), set()
        for number, turn in enumerate(scenario.turns, 1):
            for path, _ in state_leaves(turn.state or {}):
                if path in seen:
                    continue
                seen.add(path)
                name = path.rsplit(".", 1)[-1]
                if not described(domain.state_schema, path) and not mentions(text, name):
                    findings.append(StateFinding(str(suite.path), loaded.line, scenario.id,
                                                 number, path))
    return findings
