"""A judge's reply read as a verdict: the JSON the rubric asks for, or a judge failure.

The reply must be one JSON object, bare or in a single fenced block (```` ```json ... ``` ````),
with a boolean ``pass`` and a non-empty string ``reason`` of valid Unicode (other keys are
ignored). Anything
else is the verdict ``error`` with the kind ``invalid_reply``: the judge failed, which is never
a pass or a fail of the agent.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from pipeline.errors import InfraErrorKind
from pipeline.util.untrusted import storable
from warehouse.schema import JudgeVerdict

JudgeErrorKind = Literal["invalid_reply", "context_limit"] | InfraErrorKind
"""Why a judgment is an ``error``: the reply was not the JSON asked for, the evidence outgrew
the judge's context, or the call failed (an infrastructure kind) past its retries."""
REPLY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"pass": {"type": "boolean"}, "reason": {"type": "string", "minLength": 1}},
    "required": ["pass", "reason"],
    "additionalProperties": False,
}
"""The reply's JSON Schema, sent as ``response_format`` where the endpoint enforces one."""
_FENCED = re.compile(r"^```(?:json)?\s*\n(.*?)\n?```$", re.DOTALL)


@dataclass(frozen=True)
class Reading:
    verdict: JudgeVerdict
    reason: str
    error_kind: JudgeErrorKind | None = None


def read_verdict(content: str | None) -> Reading:
    """``content`` (a judge's reply) as a verdict."""
    text = (content or "").strip()
    fenced = _FENCED.match(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return _invalid("the reply is not JSON")
    if not isinstance(value, dict):
        return _invalid("the reply is not a JSON object")
    passed, reason = value.get("pass"), value.get("reason")
    if not isinstance(passed, bool):
        return _invalid("`pass` is not a boolean")
    if not isinstance(reason, str) or not reason.strip():
        return _invalid("`reason` is not a non-empty string")
    if storable(reason) != reason:
        return _invalid("`reason` is not valid Unicode (a lone surrogate)")
    return Reading("pass" if passed else "fail", reason.strip())


def _invalid(why: str) -> Reading:
    return Reading("error", f"{why} (the rubric asks for {{\"pass\": boolean, \"reason\": "
                   "nonempty string})", "invalid_reply")
