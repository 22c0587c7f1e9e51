"""The fixed lines that delimit the evidence block in a judge's user message (a line ends at
"\\n" only)."""

from __future__ import annotations

import json
from typing import Any

BEGIN = "BEGIN UNTRUSTED EVIDENCE"
END = "END UNTRUSTED EVIDENCE"


def read_block(text: str) -> dict[str, Any] | None:
    """The evidence object between the delimiter lines of ``text``; None if there is none."""
    lines = text.split("\n")  # never splitlines(): U+2028 and friends are no line ends here
    try:
        start, end = lines.index(BEGIN), lines.index(END)
        value = json.loads("\n".join(lines[start + 1:end]))
    except (ValueError, json.JSONDecodeError):
        return None
    return value if isinstance(value, dict) else None
