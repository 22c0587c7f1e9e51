"""Cases suites: each line a regression case, validated and turned into a one-turn scenario.

A suite is a cases suite when its first line is a case (it has ``input``); then every line must
be one. A case is checked like a scenario line (its JSON Schema, the pydantic model, then
against its domain: the folder the suite sits in) and becomes a ``Scenario`` of class
``regression`` carrying ``CaseRules``, so it runs through the same grid, trial and warehouse
path as every scenario. Errors are ``file:line: field: message``.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, SchemaError

from pipeline.catalog.case_models import CaseRules
from pipeline.catalog.database import check_database_rules
from pipeline.catalog.domains import Domain, load_domain
from pipeline.catalog.errors import CatalogError
from pipeline.catalog.golden import check_call, check_golden_calls, short
from pipeline.catalog.lines import validate_line
from pipeline.catalog.models import Case, Scenario, Turn

CASE_MARK = "input"
"""A suite line with this key is a case (a scenario line has ``turns``)."""


def is_case(raw: Any) -> bool:
    return isinstance(raw, dict) and CASE_MARK in raw


@cache
def _validator() -> Draft202012Validator:
    return Draft202012Validator(Case.model_json_schema(by_alias=True))


def suite_domain(path: Path) -> str:
    """A cases suite's domain: the folder ``<domain>/suites/`` it sits in."""
    return path.resolve().parent.parent.name


def domain_of_suite(path: Path, number: int, kind: str) -> Domain:
    """The domain a cases or conditions suite sits in (``<domain>/suites/``); a missing one is
    an error at ``number``, a broken one its own file's error."""
    try:
        return load_domain(suite_domain(path))
    except CatalogError as exc:
        if exc.path != suite_domain(path):
            raise
        raise CatalogError(str(path), number, "-", f"a {kind} suite lives in "
                           f"<domain>/suites/: {exc.message}") from None


def parse_case(path: Path, number: int, raw: Any) -> Scenario:
    """The scenario of one case line; CatalogError naming the line and the field."""
    where = str(path)
    case = validate_line(Case, _validator(), where, number, raw)
    domain = domain_of_suite(path, number, "cases")
    _check_against_domain(where, number, case, domain)
    schema = _read_schema(where, number, path.parent, case.expected.json_schema)
    return Scenario.model_validate({
        "id": case.id, "version": case.version, "domain": domain.name, "class": "regression",
        "title": case.title, "tags": list(case.tags), "critical": case.critical,
        "turns": [Turn(user=request_text(case), golden=list(case.golden),
                       summary=case.input.message)],
        "mutation": case.mutation, "catches": list(case.catches), "database": case.database,
        "case": CaseRules(expected=case.expected, schema_document=schema,
                          recorded=list(case.context.tool_results)),
    })


def request_text(case: Case) -> str:
    """What the agent is told: the message, then the interface context (if any)."""
    return with_interface(case.input.message, case.context.interface)


def with_interface(message: str, interface: dict[str, Any]) -> str:
    """A request as an interface passes it: the message, then the interface context (if any)
    as a fenced JSON block ``{"context": {...}}``."""
    if not interface:
        return message
    context = json.dumps({"context": interface}, ensure_ascii=False, sort_keys=True)
    return f"{message}\n\n```json\n{context}\n```"


def _check_against_domain(where: str, number: int, case: Case, domain: Domain) -> None:
    check_golden_calls(where, number, "golden", case.golden, domain)
    for index, recorded in enumerate(case.context.tool_results):
        field = f"context.tool_results.{index}"
        check_call(where, number, (f"{field}.tool", f"{field}.arguments"), recorded.tool,
                   recorded.arguments, domain)
    source = case.expected.decision_from
    if source is not None:
        spec = domain.tool(source.tool)
        if spec is None:
            raise CatalogError(where, number, "expected.decision_from.tool",
                               f"unknown tool {source.tool!r} in domain {domain.name}")
        if source.argument not in spec.parameters.get("properties", {}):
            raise CatalogError(where, number, "expected.decision_from.argument",
                               f"{source.argument!r} is not a parameter of {source.tool}")
    if case.database is not None:
        check_database_rules(where, number, "database", case.database, domain)
    _check_mutation(where, number, case, domain)


def _check_mutation(where: str, number: int, case: Case, domain: Domain) -> None:
    hints = case.mutation.model_dump(exclude_none=True)
    for name, hint in hints.items():
        if hint.get("turn", 1) != 1:
            raise CatalogError(where, number, f"mutation.{name}.turn",
                               "a case has one turn: the turn is 1")
    wrong = case.mutation.wrong_answer
    if wrong is not None:
        check_golden_calls(where, number, "mutation.wrong_answer.actions", wrong.actions,
                           domain)


def _read_schema(where: str, number: int, base: Path, name: str | None
                 ) -> dict[str, Any] | None:
    if name is None:
        return None
    field = "expected.json_schema"
    file = (base / name).resolve()
    try:
        document = json.loads(file.read_text("utf-8"))
    except FileNotFoundError:
        raise CatalogError(where, number, field, f"no such file: {file}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CatalogError(where, number, field, f"cannot read {file}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise CatalogError(where, number, field, f"{file}:{exc.lineno}: invalid JSON: "
                           f"{exc.msg}") from None
    if not isinstance(document, dict):
        raise CatalogError(where, number, field, f"{file} is not a JSON Schema object")
    try:
        Draft202012Validator.check_schema(document)
    except SchemaError as exc:
        raise CatalogError(where, number, field, f"{file}: not a valid JSON Schema: "
                           f"{short(exc.message)}") from None
    return document
