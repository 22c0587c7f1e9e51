"""Untrusted text (a model's reply, a stored value, an imported task) kept as data.

Five rules, each one function:

- ``escape_breaks``: a character a reader could take for the end of a line (U+2028, U+2029,
  U+0085, the other C0 and C1 controls, DEL) becomes its JSON escape ``\\uXXXX``, so text placed
  between delimiter lines cannot end its block: readers split on "\\n" only, and "\\n" itself
  never appears raw inside a JSON string.
- ``json_block``: a value as indented JSON with ``escape_breaks`` applied (valid JSON still:
  the escapes read back as the same characters).
- ``visible``: bidi overrides and isolates (U+202A-U+202E, U+2066-U+2069), zero-width and
  direction marks, and control characters other than newline and tab, shown as ``<U+202E>``
  so a terminal or a page shows what is there instead of reordering or hiding text.
- ``jsonl_lines``: JSON Lines split at "\\n" only, the way their writer ended them.
- ``storable``: a lone surrogate becomes its escape, so one odd reply cannot fail a batch.
"""

from __future__ import annotations

import json
import re
from typing import Any

_BREAKS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
"""Line breaks and controls, newline and tab excepted (a JSON text never holds them raw
inside a string; outside strings they are its layout)."""
_HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2064"
                     "\u2066-\u2069\u061c\ufeff\u2028\u2029]")


def escape_breaks(text: str) -> str:
    """``text`` with every line break but "\\n" and every control but tab as ``\\uXXXX``."""
    return _BREAKS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def json_block(value: Any) -> str:
    """``value`` as indented JSON (non-ASCII kept) whose only raw line breaks are its own."""
    return escape_breaks(json.dumps(value, ensure_ascii=False, indent=2, default=str))


def visible(text: str) -> str:
    """``text`` with bidi controls, zero-width characters and controls shown as ``<U+XXXX>``."""
    return _HIDDEN.sub(lambda m: f"<U+{ord(m.group()):04X}>", text)


def storable(text: str) -> str:
    """``text`` as UTF-8 can hold it: a lone surrogate (JSON can spell one, ``"\\ud800"``)
    becomes its escape instead of failing the write of a whole batch."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def jsonl_lines(text: str) -> list[str]:
    """A JSON Lines text's lines, split at "\\n" only: ``str.splitlines`` also breaks at
    U+2028, U+2029 and U+0085, which a JSON string may hold raw (it is valid JSON)."""
    return text.split("\n")
