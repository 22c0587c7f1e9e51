"""A scenario's expectations must name what its domain has, or they check nothing.

Every tool an expectation names must be one of the domain's tools, every argument one of that
tool's parameters (for a rule over any tool: of at least one tool), and every expected value must
fit the parameter's JSON Schema. Otherwise a rule silently never fails (an argument no call ever
passes) or always fails (a value no call can carry). Errors name the suite line and the field.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from pipeline.catalog.domains import Domain
from pipeline.catalog.errors import CatalogError
from pipeline.catalog.models import Scenario
from pipeline.catalog.plain import did_you_mean

_MISSING = object()


def check_expectations(where: str, number: int, scenario: Scenario, domain: Domain) -> None:
    for field, tool in _named_tools(scenario):
        if domain.tool(tool) is None:
            names = [t.name for t in domain.tools]
            raise CatalogError(where, number, field, f"unknown tool {tool!r} in domain "
                               f"{domain.name}{did_you_mean(tool, names)} (tools: "
                               f"{', '.join(names)})")
    for field, maybe_tool, argument, value in _named_arguments(scenario):
        _check_argument(where, number, domain, field, maybe_tool, argument, value)


def _named_tools(scenario: Scenario) -> Iterator[tuple[str, str]]:
    rules = scenario.expectations
    for kind, items in (("forbidden_tools", rules.forbidden_tools),
                        ("required_tools", rules.required_tools),
                        ("final_values", rules.final_values),
                        ("fresh_calls", rules.fresh_calls),
                        ("argument_constraints", rules.argument_constraints)):
        for index, rule in enumerate(items):
            tool = getattr(rule, "tool", None)
            if tool is not None:
                yield f"expectations.{kind}.{index}.tool", tool
    if rules.trajectory is not None:
        for key in ("update_tool", "confirm_tool", "create_tool"):
            yield f"expectations.trajectory.{key}", getattr(rules.trajectory, key)


def _named_arguments(scenario: Scenario) -> Iterator[tuple[str, str | None, str, Any]]:
    """(field, tool or None for any tool, argument, expected value or _MISSING)."""
    rules = scenario.expectations
    for index, constraint in enumerate(rules.argument_constraints):
        yield (f"expectations.argument_constraints.{index}.argument", constraint.tool,
               constraint.argument, constraint.equals)
    for index, final in enumerate(rules.final_values):
        yield f"expectations.final_values.{index}.argument", final.tool, final.argument, \
            final.equals
    for index, fresh in enumerate(rules.fresh_calls):
        for name, value in fresh.arguments.items():
            yield f"expectations.fresh_calls.{index}.arguments.{name}", fresh.tool, name, value
    if rules.trajectory is not None:
        for name, value in rules.trajectory.expected.items():
            yield (f"expectations.trajectory.expected.{name}", rules.trajectory.create_tool,
                   name, value)


def _check_argument(where: str, number: int, domain: Domain, field: str, tool: str | None,
                    argument: str, value: Any) -> None:
    candidates = [t for t in domain.tools if tool is None or t.name == tool]
    schemas = [(t.name, t.parameters.get("properties", {}).get(argument, _MISSING))
               for t in candidates]
    schemas = [(name, schema) for name, schema in schemas if schema is not _MISSING]
    if not schemas:
        owner = f"tool {tool}" if tool is not None else f"any tool of domain {domain.name}"
        known = [p for t in candidates for p in t.parameters.get("properties", {})]
        raise CatalogError(where, number, field, f"{argument!r} is not a parameter of {owner}: "
                           f"the rule could never apply{did_you_mean(argument, known)}")
    if value is _MISSING:
        return
    for name, schema in schemas:
        error = best_match(Draft202012Validator(schema).iter_errors(value))
        if error is not None:
            raise CatalogError(where, number, field, f"{value!r} can never be passed as "
                               f"{name}.{argument}: {error.message}")
