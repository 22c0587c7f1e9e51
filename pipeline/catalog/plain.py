"""Validation errors in a person's words: pydantic's wording where it leaks ("Extra inputs are
not permitted", "Input should be a valid dictionary or instance of X") becomes a plain message,
and an unknown key or value gets "did you mean" its closest known one (difflib)."""

from __future__ import annotations

import re
import types
from collections.abc import Iterable, Mapping, Sequence
from difflib import get_close_matches
from inspect import isclass
from typing import Annotated, Any, Union, get_args, get_origin

from jsonschema.exceptions import ValidationError as SchemaError
from pydantic import BaseModel
from pydantic_core import ErrorDetails

Loc = tuple[int | str, ...]

KNOWN_LISTED = 12
"""An unknown key with no close match lists the known ones when there are at most this many."""

_TYPE_WORDS: Mapping[str, str] = {
    "dict_type": "a mapping of keys", "model_type": "a mapping of keys",
    "model_attributes_type": "a mapping of keys", "list_type": "a list",
    "string_type": "text", "int_type": "a whole number", "int_parsing": "a whole number",
    "int_from_float": "a whole number", "float_type": "a number", "float_parsing": "a number",
    "bool_type": "true or false", "bool_parsing": "true or false",
}
"""Pydantic error types that mean "the value is not of the expected kind"."""
_BOUND_WORDS: Mapping[str, str] = {
    "greater_than": "greater than {gt}", "greater_than_equal": "greater than or equal to {ge}",
    "less_than": "less than {lt}", "less_than_equal": "less than or equal to {le}",
    "finite_number": "a finite number",
}
"""Pydantic error types that mean "the value is out of its range", in words with its bound."""


def did_you_mean(word: object, known: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the known value closest to ``word``, or ``""``."""
    if not isinstance(word, str):
        return ""
    close = get_close_matches(word, sorted(set(known)), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _concrete(tp: Any) -> list[Any]:
    """The types a (possibly optional, union or annotated) annotation stands for."""
    origin = get_origin(tp)
    if origin is Annotated:
        return _concrete(get_args(tp)[0])
    if origin in (Union, types.UnionType):
        return [c for arg in get_args(tp) for c in _concrete(arg)]
    return [tp]


def _is_model(tp: Any) -> bool:
    return isclass(tp) and issubclass(tp, BaseModel)


def _step(tp: Any, part: int | str) -> Any:
    """The annotation one location part further in, or None when it cannot be followed."""
    for candidate in _concrete(tp):
        origin, args = get_origin(candidate), get_args(candidate)
        if isinstance(part, int) and origin in (list, tuple, Sequence) and args:
            return args[0]
        if isinstance(part, str) and _is_model(candidate) and part in candidate.model_fields:
            return candidate.model_fields[part].annotation
        if isinstance(part, str) and origin in (dict, Mapping) and len(args) == 2:
            return args[1]
    return None


def keys_at(model: type[BaseModel], loc: Sequence[int | str]) -> list[str]:
    """The keys the model (or a model nested in it) takes at ``loc``."""
    tp: Any = model
    for part in loc:
        tp = _step(tp, part)
        if tp is None:
            return []
    for candidate in _concrete(tp):
        if _is_model(candidate):
            return [f.alias or name for name, f in candidate.model_fields.items()]
    return []


def _allowed_values(expected: str) -> list[str]:
    """``"'chat', 'summary' or 'structured'"`` -> the quoted values."""
    return re.findall(r"'([^']*)'", expected)


def _unknown_key(model: type[BaseModel] | None, loc: Loc) -> str:
    known = keys_at(model, loc[:-1]) if model is not None else []
    return unknown_key(loc[-1] if loc else None, known)


def unknown_key(key: object, known: Sequence[str]) -> str:
    """"unknown key" with the closest known key, or the known keys when they are few."""
    hint = did_you_mean(key, known)
    if not hint and 0 < len(known) <= KNOWN_LISTED:
        hint = f" (known: {', '.join(known)})"
    return f"unknown key{hint}"


def plain_message(model: type[BaseModel] | None, error: ErrorDetails) -> str:
    """One pydantic error as a plain message (its location is said apart); ``model``, the one
    validated, lets an unknown key name its closest known one."""
    kind, value, loc = error["type"], error.get("input"), tuple(error["loc"])
    if kind == "extra_forbidden":
        return _unknown_key(model, loc)
    if kind in ("literal_error", "enum"):
        allowed = _allowed_values(str((error.get("ctx") or {}).get("expected", "")))
        return (f"{value!r} is not one of {', '.join(allowed)}"
                + did_you_mean(value, allowed))
    if kind == "missing":
        return "missing: this key is required"
    if kind in _TYPE_WORDS:
        return f"expected {_TYPE_WORDS[kind]}, got {_shown(value)}"
    if kind in _BOUND_WORDS:
        bound = _BOUND_WORDS[kind].format(**(error.get("ctx") or {}))
        return f"must be {bound}, got {_shown(value)}"
    return str(error["msg"]).removeprefix("Value error, ")


def _shown(value: object) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing (null)"
    return repr(value)


def schema_error(error: SchemaError) -> tuple[list[int | str], str] | None:
    """A JSON Schema error about an unknown key or value as (location, plain message with a
    "did you mean"); None for any other error (its own message is plain enough)."""
    where: list[int | str] = list(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = list((error.schema.get("properties") or {}) if isinstance(error.schema, dict)
                     else {})
        extra = sorted(str(k) for k in error.instance if k not in known)
        if extra:
            return [*where, extra[0]], unknown_key(extra[0], known)
    if error.validator == "enum" and isinstance(error.validator_value, list):
        allowed = [str(v) for v in error.validator_value]
        return where, (f"{error.instance!r} is not one of {', '.join(allowed)}"
                       + did_you_mean(error.instance, allowed))
    return None
