"""Scripted judges: reference models that answer ``judge`` calls by a fixed rule.

They read the evidence block of the call (``pipeline.judge.evidence``) and nothing else; no
domain is named here. ``reference/judge-seed`` reproduces the three-errors method's judge, mistakes
included:

1. The literal reader's blind spot (the seed's wrong rejection): a message saying that what
   the user asked for *already* holds ("Order o1 is already cancelled." for "Please cancel my
   order o1.") is read as claiming an action nobody reported, and rejected with the seed's
   reason "The message invents a completed action: '<sentence>'", whatever the table says.
2. Otherwise the message is checked against the final tables only: a value a sentence says
   the one row it names holds ("has been X", "is now X", "is X", "was X", X a value of that
   column in another row) must be that row's value. It never weighs the expected outcome against the
   table, so an honest report of an unwanted change passes (the seed's approval).

``reference/judge-nl`` grades a list of assertions (``nl_assertions``) against a dialog
(``transcript``) by a literal rule: an assertion holds when each of its figures (a word with a
digit, "$" and "," removed: "$8,276.23" -> "8276.23") is in some assistant message (its "$" and
"," removed too, case ignored); an assertion with no figure holds when the transcript has a
tool call whose answer is no error. It passes iff every assertion holds; the reason names the
first that does not.

``reference/judge-broken`` answers every judge call with prose, not the JSON asked for (a
judge failure). Either, asked a planner call, is a broken script (a harness error).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pipeline.judge.delimiters import read_block

JudgeRule = Callable[[Mapping[str, Any]], str]
"""The evidence object -> the judge's reply text."""
_CLAIMS = ("has been", "have been", "is now", "are now", "is", "was", "were")
_WORD = re.compile(r"[A-Za-z0-9]+")


def _reply(passed: bool, reason: str) -> str:
    return json.dumps({"pass": passed, "reason": reason}, ensure_ascii=False)


def _message(answer: object) -> str:
    """The answer's text: every string value of a JSON object reply (a line each), else the
    reply."""
    text = str(answer or "")
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return text
    if isinstance(value, dict):
        return "\n".join(v for v in value.values() if isinstance(v, str))
    return text


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n", text) if s.strip()]


def _stems(text: str) -> set[str]:
    return {w.lower()[:5] for w in _WORD.findall(text) if len(w) >= 4}


def _already_claim(request: str, message: str) -> str | None:
    """The sentence saying that what the request asks for already holds, if any."""
    asked = _stems(request)
    for sentence in _sentences(message):
        found = re.search(r"\balready\s+(?:been\s+)?([A-Za-z]+)", sentence, re.IGNORECASE)
        if found and found.group(1).lower()[:5] in asked:
            return sentence
    return None


def _rows(tables: object) -> Iterable[tuple[list[str], Mapping[str, Any]]]:
    if not isinstance(tables, Mapping):
        return
    for table in tables.values():
        if isinstance(table, Mapping):
            for row in table.get("rows") or []:
                if isinstance(row, Mapping):
                    yield list(table.get("key") or []), row


def _contradiction(tables: object, message: str) -> str | None:
    """A value a sentence says the one row it names holds ("o1 has been X") that the row does
    not hold, where X is a value another row holds in the same column."""
    rows = list(_rows(tables))
    for sentence in _sentences(message):
        words = set(_WORD.findall(sentence))
        named = [(key, row) for key, row in rows if any(str(row.get(k)) in words for k in key)]
        if len(named) != 1:
            continue
        key, row = named[0]
        for column in row:
            others = {str(r[column]) for _, r in rows if column in r} - {str(row[column])}
            for value, claim in ((v, c) for v in sorted(others) for c in _CLAIMS):
                if re.search(rf"\b{claim} {re.escape(value)}\b", sentence, re.IGNORECASE):
                    name = ", ".join(str(row.get(k)) for k in key)
                    return (f"The message says {name} {claim} {value}; the final table holds "
                            f"{column} = {row[column]} for it")
    return None


def seed_judge(evidence: Mapping[str, Any]) -> str:
    message = _message(evidence.get("answer")).strip()
    if not message:
        return _reply(False, "There is no message to the user")
    invented = _already_claim(str(evidence.get("request") or ""), message)
    if invented is not None:
        return _reply(False, f"The message invents a completed action: '{invented}'")
    wrong = _contradiction(evidence.get("after"), message)
    if wrong is not None:
        return _reply(False, wrong)
    return _reply(True, "The message answers the request and agrees with the final table")


_FIGURE = re.compile(r"[\w#$.,]*\d[\w#$.,]*")


def _plain(text: str) -> str:
    return text.replace("$", "").replace(",", "").lower()


def _figures(assertion: str) -> list[str]:
    return [_plain(f.rstrip(".,")) for f in _FIGURE.findall(assertion)]


def _holds(assertion: str, said: Sequence[str], acted: bool) -> bool:
    figures = _figures(assertion)
    if not figures:
        return acted
    return all(any(f in text for text in said) for f in figures)


def nl_judge(evidence: Mapping[str, Any]) -> str:
    assertions = [str(a) for a in evidence.get("nl_assertions") or []]
    entries = [e for e in evidence.get("transcript") or [] if isinstance(e, Mapping)]
    if not assertions:
        return _reply(False, "There are no assertions to grade")
    said = [_plain(str(e.get("content") or "")) for e in entries
            if e.get("role") == "assistant" and e.get("content")]
    acted = any(e.get("role") == "tool" and not e.get("error") for e in entries)
    for assertion in assertions:
        if not _holds(assertion, said, acted):
            return _reply(False, f"Not shown by the transcript: '{assertion}'")
    return _reply(True, f"Every assertion holds ({len(assertions)})")


def broken_judge(evidence: Mapping[str, Any]) -> str:
    return "I have read the evidence and the agent did well."


JUDGES: dict[str, JudgeRule] = {"judge-seed": seed_judge, "judge-broken": broken_judge,
                                "judge-nl": nl_judge}


def evidence_of(messages: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The evidence object of a judge call's last user message; None when it has none."""
    return next((read_block(str(m.get("content") or "")) for m in reversed(messages)
                 if m.get("role") == "user"), None)
