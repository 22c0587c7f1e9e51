"""Catalog errors name the file, the line and the field."""

from __future__ import annotations

from pydantic import ValidationError


class CatalogError(ValueError):
    """Bad catalog input. ``str()`` is ``path:line: field: message``."""

    def __init__(self, path: str, line: int | None, field: str, message: str) -> None:
        self.path = path
        self.line = line
        self.field = field
        self.message = message
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {field}: {message}")


def format_location(parts: tuple[int | str, ...] | list[int | str]) -> str:
    return ".".join(str(p) for p in parts) or "-"


def format_pydantic_error(exc: ValidationError) -> tuple[str, str]:
    """The first error of a pydantic validation as (field path, message)."""
    first = exc.errors(include_url=False)[0]
    location = [p for p in first["loc"] if p not in ("CallAction", "ReplyAction")]
    return format_location(location), str(first["msg"])
