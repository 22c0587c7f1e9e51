"""Values need a source: an id the agent passes to a state-changing call, or names in a reply,
must have appeared before it, in a user turn or a tool result.

A write tool declares which of its arguments are checked (ids, recipients) and which are free
(a message body) in ``tools.json`` (``argument_sources``); a domain declares the shapes of the
ids its replies may name (``reply_ids``). A value is sourced when, after normalisation (case,
whitespace, number formats), it occurs as a whole token in a user message of that turn or an
earlier one, or in the result of a tool call of an earlier step. A call's arguments are not a
source, nor is an error a tool answered (it may only echo them): an id the agent invented stays
invented when a refusal repeats it.

Two checks, placed at the first value without a source: ``value_source`` at the call
(Arguments score) and ``value_source:reply`` at the reply (Response score). Pure functions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline.catalog import Domain
from pipeline.catalog.models import ArgumentSource
from pipeline.scoring.journal import Journal, parse_arguments
from pipeline.scoring.results import CheckResult, ScoreName
from pipeline.trace import AssistantMessage, ToolCall, ToolResult, UserMessage

_SPACES = re.compile(r"\s+")
_THOUSANDS = re.compile(r"(?<![\d.,])(\d{1,3})((?:[,\u00a0\u202f ]\d{3})+)"
                        r"(?:(?![\d,.]\d)|(?=\.\d))")
"""Groups of three digits after a separator (a decimal part may follow: "1,800.00")."""
_DECIMAL = re.compile(r"(?<![\d.])(\d+)[.,](\d+)(?![\d.])")


def normalised(text: str) -> str:
    """``text`` casefolded, its whitespace collapsed, its numbers written one way: no
    thousands separators ("1 800", "1,800": 1800), a decimal point and no trailing zeros
    ("15.00": 15, "2,50": 2.5)."""
    text = _SPACES.sub(" ", text.casefold()).strip()
    text = _THOUSANDS.sub(lambda m: m.group(1) + re.sub(r"\D", "", m.group(2)), text)
    return _DECIMAL.sub(_decimal, text)


def _decimal(match: re.Match[str]) -> str:
    fraction = match.group(2).rstrip("0")
    return match.group(1) + (f".{fraction}" if fraction else "")


def scalar_values(value: Any) -> Iterator[str]:
    """The checkable scalars inside an argument's value (lists and objects walked), as text;
    booleans, nulls and empty strings say nothing about a source."""
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, list):
        for item in value:
            yield from scalar_values(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from scalar_values(item)
    elif isinstance(value, int | float):
        yield normalised(repr(value))
    elif str(value).strip():
        yield normalised(str(value))


def _readable(result: str) -> str:
    """A tool result as text, JSON escapes decoded (``"\\u041c..."`` reads as the word)."""
    try:
        return json.dumps(json.loads(result), ensure_ascii=False)
    except (json.JSONDecodeError, TypeError):
        return result


def _refusal(result: ToolResult) -> bool:
    """The tool refused or failed: its answer may only echo the arguments."""
    if result.tool_error is not None:
        return True
    try:
        value = json.loads(result.result or "")
    except json.JSONDecodeError:
        return False
    return isinstance(value, dict) and set(value) == {"error"}


@dataclass
class Seen:
    """What the agent was shown so far: user turns, and tool results by (turn, step)."""

    user: list[str] = field(default_factory=list)
    results: list[tuple[int, int, str]] = field(default_factory=list)

    def has(self, value: str, turn: int, step: int) -> bool:
        """``value`` (normalised) occurs as a whole token in a user turn, or in a tool result
        of a step before (``turn``, ``step``)."""
        token = re.compile(rf"(?<!\w){re.escape(value)}(?!\w)")
        return (any(token.search(text) for text in self.user)
                or any(token.search(text) for t, s, text in self.results if (t, s) < (turn, step)))


@dataclass(frozen=True)
class Unsourced:
    turn: int
    step: int
    what: str
    """Where the value was: ``tool.argument`` or ``reply``."""
    value: str


def unsourced_values(journal: Journal, checked: Mapping[str, Sequence[str]],
                     reply_ids: Sequence[re.Pattern[str]]
                     ) -> tuple[list[Unsourced], list[Unsourced]]:
    """Values without a source, in order: in calls (``checked``: tool -> its checked
    arguments), and ids in final replies (``reply_ids``)."""
    seen, in_calls, in_replies = Seen(), [], []
    finals = {(r.turn, r.step) for r in journal.replies.values()}
    for event in journal.events:
        if isinstance(event, UserMessage):
            seen.user.append(normalised(event.content or ""))
        elif isinstance(event, ToolResult) and event.result and not _refusal(event):
            seen.results.append((event.turn, event.step, normalised(_readable(event.result))))
        elif isinstance(event, ToolCall) and event.tool_name in checked:
            in_calls += _call_unsourced(event, checked[event.tool_name], seen)
        elif (isinstance(event, AssistantMessage) and reply_ids and event.content
              and (event.turn, event.step) in finals):
            in_replies += _reply_unsourced(event, reply_ids, seen)
    return in_calls, in_replies


def _call_unsourced(call: ToolCall, names: Sequence[str], seen: Seen) -> list[Unsourced]:
    arguments = parse_arguments(call.arguments) or {}
    return [Unsourced(call.turn, call.step, f"{call.tool_name}.{name}", value)
            for name in names if name in arguments
            for value in scalar_values(arguments[name])
            if not seen.has(value, call.turn, call.step)]


def _reply_unsourced(reply: AssistantMessage, patterns: Sequence[re.Pattern[str]],
                     seen: Seen) -> list[Unsourced]:
    named = dict.fromkeys(normalised(m.group(0)) for p in patterns
                          for m in p.finditer(reply.content or ""))
    return [Unsourced(reply.turn, reply.step, "reply", value) for value in named
            if not seen.has(value, reply.turn, reply.step)]


def checked_arguments(domain: Domain) -> dict[str, list[str]]:
    """Tool -> the arguments its ``argument_sources`` marks as checked."""
    wanted: ArgumentSource = "checked"
    return {t.name: [a for a, kind in t.argument_sources.items() if kind == wanted]
            for t in domain.tools if wanted in t.argument_sources.values()}


def value_source_checks(journal: Journal, domain: Domain) -> list[CheckResult]:
    """``value_source`` when the domain checks some argument, ``value_source:reply`` when it
    declares reply ids; each fails at its first value without a source."""
    checked = checked_arguments(domain)
    in_calls, in_replies = unsourced_values(journal, checked, domain.reply_ids)
    results = []
    if checked:
        results.append(_check("value_source", in_calls, "arguments",
                              "every checked argument has a source"))
    if domain.reply_ids:
        results.append(_check("value_source:reply", in_replies, "response",
                              "every id the replies name has a source"))
    return results


def _check(check_id: str, unsourced: list[Unsourced], score: ScoreName, ok: str) -> CheckResult:
    if not unsourced:
        return CheckResult(check_id, "value_source", True, None, None, ok, score)
    first = unsourced[0]
    more = f" (and {len(unsourced) - 1} more)" if len(unsourced) > 1 else ""
    return CheckResult(check_id, "value_source", False, first.turn, first.step,
                       f"{first.what}={first.value!r} appeared in no user turn or tool result "
                       f"before it{more}", score)
