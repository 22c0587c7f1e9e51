"""One suite line validated as a model: its generated JSON Schema first (the error a catalog
author can look up), then the pydantic model; either failure names the file, line and field."""

from __future__ import annotations

from typing import Any, TypeVar

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from pydantic import BaseModel, ValidationError

from pipeline.catalog.errors import CatalogError, format_location, format_pydantic_error
from pipeline.catalog.golden import short

M = TypeVar("M", bound=BaseModel)


def validate_line(model: type[M], schema: Draft202012Validator, where: str, number: int,
                  raw: Any) -> M:
    error = best_match(schema.iter_errors(raw))
    if error is not None:
        raise CatalogError(where, number, format_location(list(error.absolute_path)),
                           short(error.message))
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        field, message = format_pydantic_error(exc)
        raise CatalogError(where, number, field, message) from None
