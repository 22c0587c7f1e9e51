"""YAML and JSON read with the line of every key, so a mistake names the file, line and field
(the loader, the line recorder and ``read_json`` live in ``jsonlines``; ``read_json`` is
re-exported here)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from pipeline.catalog.errors import CatalogError, format_location, raise_all
from pipeline.catalog.jsonlines import LineLoader, Location, line_of, read_json, record_lines
from pipeline.catalog.plain import plain_message


def read_yaml_mapping(path: Path, what: str) -> tuple[dict[str, Any], dict[Location, int]]:
    """A YAML file that must be a mapping, and the line of every key; CatalogError (with the
    line) when it is missing, not YAML or not a mapping. ``what`` names it in the error."""
    where = str(path)
    try:
        text = path.read_text("utf-8")
    except OSError as exc:
        raise CatalogError(where, None, "-", f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise CatalogError(where, None, "-", "not UTF-8") from None
    loader = LineLoader(text)
    try:
        node = loader.get_single_node()
        lines: dict[Location, int] = {}
        if node is not None:
            lines[()] = node.start_mark.line + 1
            record_lines(where, node, (), lines)
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise CatalogError(where, line, "-", f"invalid YAML: {exc.problem or exc.context}"
                           ) from None
    except yaml.YAMLError as exc:
        raise CatalogError(where, None, "-", f"invalid YAML: {exc}") from None
    finally:
        loader.dispose()
    if not isinstance(data, dict):
        raise CatalogError(where, lines.get((), 1), "-",
                           f"{what} is a mapping of keys, got {type(data).__name__}")
    return data, lines


M = TypeVar("M", bound=BaseModel)


def validate_located(model: type[M], data: Any, path: Path, lines: Mapping[Location, int]
                     ) -> M:
    """``model`` validated from ``data``; every error, each as ``path:line: field: message``
    in plain words (``CatalogErrors`` when there are several)."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise_all(located_errors(model, exc, str(path), lines))
        raise  # unreachable: a ValidationError holds at least one error


def located_errors(model: type[BaseModel], exc: ValidationError, path: str,
                   lines: Mapping[Location, int]) -> list[CatalogError]:
    """Each error of a validation of ``model``, with the line of its key."""
    return [CatalogError(path, line_of(tuple(e["loc"]), lines), format_location(list(e["loc"])),
                         plain_message(model, e))
            for e in exc.errors(include_url=False)]


def _message(message: str) -> str:
    return message.removeprefix("Value error, ")


__all__ = ["Location", "line_of", "located_errors", "read_json", "read_yaml_mapping",
           "validate_located"]
