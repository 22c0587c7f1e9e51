"""One regex that finds whether any of several does: a cheap first look before each is run.

Scoring asks of many clauses whether any of a tool's or an attribute's patterns occurs in them
(``any(p.search(clause) for p in patterns)``), and most clauses hold none. ``union`` joins the
patterns into one alternation, so that question costs one scan; the caller runs the patterns
themselves only where the union found something. The union is built only when it answers
exactly as the patterns would: same flags, not verbose, no groups by name or number referred to
(named groups, backreferences, conditionals), no inline global flags; else it is None and the
caller runs each pattern as before.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_UNSAFE = re.compile(r"\\[1-9]|\(\?P=|\(\?\(|\(\?[aiLmsux]+\)")
"""What an alternation could change the meaning of: references to groups by number or name
(numbers shift when patterns are joined), conditionals, and inline global flags."""


def union(patterns: Sequence[re.Pattern[str]]) -> re.Pattern[str] | None:
    """A pattern that matches somewhere in a text if and only if one of ``patterns`` does;
    None when there are none or they cannot be joined exactly."""
    if not patterns:
        return None
    flags = patterns[0].flags
    if flags & re.VERBOSE or any(p.flags != flags or p.groupindex or _UNSAFE.search(p.pattern)
                                 for p in patterns):
        return None
    try:
        return re.compile("|".join(f"(?:{p.pattern})" for p in patterns), flags)
    except re.error:
        return None


def any_found(patterns: Sequence[re.Pattern[str]], joined: re.Pattern[str] | None,
              text: str) -> bool:
    """Whether one of ``patterns`` occurs in ``text``; ``joined`` is their ``union``."""
    if joined is not None:
        return joined.search(text) is not None
    return any(p.search(text) for p in patterns)
