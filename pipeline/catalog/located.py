"""YAML and JSON read with the line of every key, so a mistake names the file, line and field."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from pipeline.catalog import CatalogError
from pipeline.catalog.errors import format_location

Location = tuple[str | int, ...]


class _LineLoader(yaml.SafeLoader):  # type: ignore[misc]  # PyYAML ships no type hints
    """A SafeLoader that records the line of every mapping key and sequence item."""

    def load_with_lines(self, path: str) -> tuple[Any, dict[Location, int]]:
        node = self.get_single_node()
        if node is None:
            return None, {}
        lines: dict[Location, int] = {(): node.start_mark.line + 1}
        _record_lines(path, node, (), lines)
        return self.construct_document(node), lines


def _record_lines(path: str, node: yaml.Node, loc: Location, lines: dict[Location, int]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = str(key_node.value)
            line = key_node.start_mark.line + 1
            if loc + (key,) in lines:
                raise CatalogError(path, line, format_location([*loc, key]),
                                   f"duplicate key (first on line {lines[loc + (key,)]})")
            lines[loc + (key,)] = line
            _record_lines(path, value_node, loc + (key,), lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines[loc + (index,)] = item.start_mark.line + 1
            _record_lines(path, item, loc + (index,), lines)


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
    loader = _LineLoader(text)
    try:
        data, lines = loader.load_with_lines(where)
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
    """``model`` validated from ``data``; the first error as ``path:line: field: message``."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        loc: Location = tuple(first["loc"])
        raise CatalogError(str(path), line_of(loc, lines), format_location(list(loc)),
                           _message(str(first["msg"]))) from None


def line_of(loc: Location, lines: Mapping[Location, int]) -> int | None:
    """Line of the key at ``loc``, or of its nearest recorded parent (a missing key)."""
    for end in range(len(loc), -1, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return None


def _message(message: str) -> str:
    return message.removeprefix("Value error, ")
