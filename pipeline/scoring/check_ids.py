"""Check ids are readable UTF-8: a value inside an id (``argument:*.city="Москва"@1..``) is
written as JSON without escapes (``id_value``). Ids stored before that wrote non-ASCII text as
JSON escapes (``"\\u041c\\u043e..."``); ``readable_check_id`` reads either form as today's, so
labels, old runs and new runs name the same check alike."""

from __future__ import annotations

import json
import re

_ESCAPES = re.compile(r"(?<!\\)((?:\\\\)*)((?:\\u[0-9a-fA-F]{4})+)")
"""A run of ``\\uXXXX`` escapes not itself escaped (preceded by an even number of
backslashes, kept as they are)."""


def id_value(value: object) -> str:
    """``value`` as a check id writes it: JSON, non-ASCII text as itself."""
    return json.dumps(value, ensure_ascii=False)


def readable_check_id(check_id: str) -> str:
    """``check_id`` with the JSON escapes of an older id decoded (today's ids have none)."""
    if "\\u" not in check_id:
        return check_id
    return _ESCAPES.sub(_decoded, check_id)


def _decoded(match: re.Match[str]) -> str:
    text = str(json.loads(f'"{match.group(2)}"'))
    if any(0xD800 <= ord(c) <= 0xDFFF for c in text):  # a lone surrogate half: keep it escaped
        return match.group(0)
    return match.group(1) + text
