"""Golden tool calls must name a tool of their domain and pass its argument schema."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from pipeline.catalog.domains import Domain
from pipeline.catalog.errors import CatalogError, format_location
from pipeline.catalog.models import CallAction, GoldenAction
from pipeline.catalog.plain import did_you_mean


def short(message: str, limit: int = 200) -> str:
    return message if len(message) <= limit else message[: limit - 3] + "..."


def check_call(where: str, number: int, fields: tuple[str, str], name: str,
               arguments: dict[str, Any] | None, domain: Domain) -> None:
    """``name`` is a tool of ``domain`` and ``arguments`` (unless None) fit its parameters;
    ``fields``: the (tool name, arguments) fields named in an error."""
    name_field, arguments_field = fields
    spec = domain.tool(name)
    if spec is None:
        raise CatalogError(where, number, name_field, f"unknown tool {name!r} in domain "
                           f"{domain.name}{did_you_mean(name, [t.name for t in domain.tools])}")
    if arguments is None:
        return
    error = best_match(Draft202012Validator(spec.parameters).iter_errors(arguments))
    if error is not None:
        path = format_location([arguments_field, *error.absolute_path])
        raise CatalogError(where, number, path, short(error.message))


def check_golden_calls(where: str, number: int, field: str, golden: Sequence[GoldenAction],
                       domain: Domain) -> None:
    """Every call of ``golden`` (at ``field``.<index>) against ``domain``."""
    for index, action in enumerate(golden):
        if isinstance(action, CallAction):
            call = f"{field}.{index}.call"
            check_call(where, number, (f"{call}.name", f"{call}.arguments"), action.call.name,
                       action.call.arguments, domain)
