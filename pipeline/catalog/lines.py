"""One suite line validated as a model: its generated JSON Schema first (the error a catalog
author can look up), then the pydantic model; either failure names the file, line and field.

A line that passed a schema is remembered (by its canonical JSON) for as long as the process
lives: a JSON Schema verdict depends on the schema and the value only, and suites are loaded
again and again (every rescore and judge run loads every known suite)."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from pydantic import BaseModel, ValidationError

from pipeline.catalog.errors import CatalogError, format_location, format_pydantic_error
from pipeline.catalog.golden import short
from pipeline.catalog.plain import plain_message, schema_error

M = TypeVar("M", bound=BaseModel)
_passed: dict[int, tuple[Draft202012Validator, set[str]]] = {}
"""id(schema) -> (the schema, kept alive so its id is never reused; lines that passed it)."""


def validate_line(model: type[M], schema: Draft202012Validator, where: str, number: int,
                  raw: Any) -> M:
    _, passed = _passed.setdefault(id(schema), (schema, set()))
    text = json.dumps(raw, sort_keys=True, ensure_ascii=False)
    if text not in passed:
        error = best_match(schema.iter_errors(raw))
        if error is not None:
            plain = schema_error(error)
            location, message = plain or (list(error.absolute_path), short(error.message))
            raise CatalogError(where, number, format_location(location), message)
        passed.add(text)
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        field, _ = format_pydantic_error(exc)
        raise CatalogError(where, number, field,
                           plain_message(model, exc.errors(include_url=False)[0])) from None
