"""JSON documents with the line of every key, so an error names the line of its field."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from pipeline.catalog.errors import CatalogError

Location = tuple[str | int, ...]


class LineLoader(yaml.SafeLoader):  # type: ignore[misc]  # PyYAML ships no type hints
    """A SafeLoader that records the line of every mapping key and sequence item."""


def record_lines(path: str, node: yaml.Node, loc: Location, lines: dict[Location, int]) -> None:
    """Lines of ``node``'s keys and items under ``loc``; a duplicate key is an error."""
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = str(key_node.value)
            line = key_node.start_mark.line + 1
            if loc + (key,) in lines:
                raise CatalogError(path, line, ".".join(map(str, (*loc, key))) or "-",
                                   f"duplicate key (first on line {lines[loc + (key,)]})")
            lines[loc + (key,)] = line
            record_lines(path, value_node, loc + (key,), lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines[loc + (index,)] = item.start_mark.line + 1
            record_lines(path, item, loc + (index,), lines)


def line_of(loc: Location | list[Any], lines: Mapping[Location, int]) -> int | None:
    """Line of the key at ``loc``, or of its nearest recorded parent (a missing key)."""
    key = tuple(loc)
    for end in range(len(key), -1, -1):
        if key[:end] in lines:
            return lines[key[:end]]
    return None


def read_json(path: Path) -> tuple[Any, dict[Location, int]]:
    """A JSON file's value and the line of every key; CatalogError (with the line) when the
    file is missing or not JSON."""
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        raise CatalogError(str(path), None, "-", "file is missing") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CatalogError(str(path), None, "-", f"cannot read: {exc}") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CatalogError(str(path), exc.lineno, "-", f"invalid JSON: {exc.msg}") from None
    lines: dict[Location, int] = {}
    try:  # JSON is YAML: its parser keeps the marks the JSON one drops
        loader = LineLoader(text)
        try:
            node = loader.get_single_node()
        finally:
            loader.dispose()
        if node is not None:
            lines[()] = node.start_mark.line + 1
            record_lines(str(path), node, (), lines)
    except yaml.YAMLError:
        pass  # valid JSON YAML cannot read (rare escapes): errors then name no line
    return value, lines
