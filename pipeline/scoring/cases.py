"""Checks of a regression case (the regression-suite method): the decision, required and forbidden
terms, the
reply's JSON Schema. Each failed rule has a stable rule code as its check id.

The contract of a case's answer (docs/cases.md): the decision is read from the final reply, a
JSON object (bare, or in one fenced block) with a string ``decision`` field, or, when the case
names ``decision_from``, from that argument of the last accepted call of that tool. Text rules
read the reply's text: every string value of its JSON object when it is one, else the whole
reply; terms are casefolded; a forbidden ``{"claim": ...}`` is negation-aware.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from jsonschema import Draft202012Validator

from pipeline.catalog.case_models import CaseRules, ClaimTerm, ForbiddenTerm, term_text
from pipeline.scoring.claims import asserts
from pipeline.scoring.journal import Journal, Reply
from pipeline.scoring.results import CheckKind, CheckResult

CASE_TURN = 1
_FENCE = re.compile(r"^```[A-Za-z]*\s*\n?(?P<body>.*?)\n?```$", re.DOTALL)


def reply_json(text: str) -> Any | None:
    """The JSON value of a reply that is one (bare or in one fenced block); None otherwise."""
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    body = fenced.group("body") if fenced else stripped
    try:
        return json.loads(body)
    except json.JSONDecodeError:
        return None


def json_strings(value: Any) -> Iterator[str]:
    """Every string inside a parsed JSON value, depth first."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from json_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from json_strings(item)


def reply_text(text: str) -> str:
    """What text rules read: the string values of a JSON object reply, else the reply."""
    value = reply_json(text)
    return "\n".join(json_strings(value)) if isinstance(value, dict) else text


def case_checks(journal: Journal, rules: CaseRules) -> list[CheckResult]:
    """Every rule of the case over the journal's final reply of its one turn."""
    reply = journal.replies.get(CASE_TURN)
    checks = [decision_check(journal, rules, reply)]
    text = reply_text(reply.text) if reply is not None else ""
    checks += [_term_check(f"missing_required:{term}", "case_required_term",
                           _contains(text, term), reply,
                           f"the reply {{}} {term!r}", ("contains", "lacks"))
               for term in rules.expected.required_terms]
    checks += [_term_check(f"contains_forbidden:{term_text(term)}", "case_forbidden_term",
                           not _says(text, term), reply, f"the reply {{}} {term_text(term)!r}",
                           ("does not say", "says"))
               for term in rules.expected.forbidden_terms]
    if rules.schema_document is not None:
        checks += schema_checks(rules.schema_document, reply)
    return checks


def _point(ok: bool, reply: Reply | None) -> tuple[int | None, int | None]:
    if ok:
        return None, None
    return CASE_TURN, reply.step if reply is not None else None


def _term_check(check_id: str, kind: CheckKind, ok: bool, reply: Reply | None, detail: str,
                words: tuple[str, str]) -> CheckResult:
    turn, step = _point(ok, reply)
    return CheckResult(check_id, kind, ok, turn, step, detail.format(words[0 if ok else 1]),
                       "response")


def _contains(text: str, term: str) -> bool:
    return term.casefold() in text.casefold()


def _says(text: str, term: ForbiddenTerm) -> bool:
    if isinstance(term, ClaimTerm):
        return asserts(text, term.claim)
    return _contains(text, term)


def extracted_decision(journal: Journal, rules: CaseRules, reply: Reply | None
                       ) -> tuple[str | None, str]:
    """(the agent's decision or None, where it was read / why none was)."""
    source = rules.expected.decision_from
    if source is not None:
        calls = [c for c in journal.calls if c.name == source.tool]
        if not calls:
            return None, f"no accepted call of {source.tool}"
        value = (calls[-1].arguments or {}).get(source.argument)
        return (value, f"{source.tool}.{source.argument}") if isinstance(value, str) else (
            None, f"{source.tool} has no string {source.argument!r}")
    if reply is None:
        return None, "no final reply"
    value = reply_json(reply.text)
    if not isinstance(value, dict):
        return None, "the final reply is not a JSON object"
    field = rules.expected.decision_field
    decision = value.get(field)
    return (decision, f"reply.{field}") if isinstance(decision, str) else (
        None, f"the reply's JSON has no string {field!r}")


def decision_check(journal: Journal, rules: CaseRules, reply: Reply | None) -> CheckResult:
    wanted = rules.expected.decision
    got, where = extracted_decision(journal, rules, reply)
    ok = got == wanted
    turn, step = _point(ok, reply)
    detail = f"decision {got!r} ({where}), expected {wanted!r}" if got is not None else (
        f"no decision: {where}; expected {wanted!r}")
    return CheckResult("decision_mismatch", "case_decision", ok, turn, step, detail, "function")


def pointer(path: Any) -> str:
    """The JSON pointer (RFC 6901) of a jsonschema error path ("" is the whole reply)."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def schema_checks(schema: dict[str, Any], reply: Reply | None) -> list[CheckResult]:
    """One passing ``schema:`` check, or one failing ``schema:<pointer>`` per location."""
    value = reply_json(reply.text) if reply is not None else None
    if value is None:
        turn, step = _point(False, reply)
        return [CheckResult("schema:", "case_schema", False, turn, step,
                            "the final reply is not JSON", "response")]
    failures: dict[str, str] = {}
    for error in Draft202012Validator(schema).iter_errors(value):
        failures.setdefault(pointer(error.absolute_path), error.message[:200])
    if not failures:
        return [CheckResult("schema:", "case_schema", True, None, None,
                            "the reply's JSON fits the schema", "response")]
    turn, step = _point(False, reply)
    return [CheckResult(f"schema:{where}", "case_schema", False, turn, step, message,
                        "response") for where, message in sorted(failures.items())]
