"""Catalog errors name the file, the line and the field; a file's mistakes are found in one pass
and reported together (``CatalogErrors``, at most ``MAX_ERRORS`` of them listed)."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ValidationError

from pipeline.catalog.plain import plain_message

MAX_ERRORS = 20
"""The most mistakes of one file listed one by one (then how many more there are)."""


class CatalogError(ValueError):
    """Bad catalog input. ``str()`` is ``path:line: field: message`` (``path:line: message``
    when the mistake is the whole file's, field ``""``)."""

    def __init__(self, path: str, line: int | None, field: str, message: str) -> None:
        self.path = path
        self.line = line
        self.field = "" if field == "-" else field
        self.message = message
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {self.field}: {message}" if self.field
                         else f"{where}: {message}")


class CatalogErrors(CatalogError):
    """Several mistakes of one file, found in one pass. Its own path, line, field and message are
    the first mistake's; ``str()`` lists each on its own line (at most ``MAX_ERRORS``)."""

    def __init__(self, errors: Sequence[CatalogError]) -> None:
        first = errors[0]
        super().__init__(first.path, first.line, first.field, first.message)
        self.errors = tuple(errors)
        shown = [str(e) for e in errors[:MAX_ERRORS]]
        if len(errors) > MAX_ERRORS:
            shown.append(f"{first.path}: ... and {len(errors) - MAX_ERRORS} more mistake(s)")
        self.args = ("\n".join(shown),)


def raise_all(errors: Sequence[CatalogError]) -> None:
    """Raise the one mistake, or all of them as ``CatalogErrors``; nothing when there is none."""
    unique = list({str(e): e for e in errors}.values())  # a shared file's mistake, once
    if len(unique) == 1:
        raise unique[0]
    if unique:
        raise CatalogErrors(unique)


def format_location(parts: tuple[int | str, ...] | list[int | str]) -> str:
    return ".".join(str(p) for p in parts) or "-"


def format_pydantic_error(exc: ValidationError) -> tuple[str, str]:
    """The first error of a pydantic validation as (field path, message)."""
    first = exc.errors(include_url=False)[0]
    location = [p for p in first["loc"] if p not in ("CallAction", "ReplyAction")]
    return format_location(location), plain_message(None, first)
