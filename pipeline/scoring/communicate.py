"""COMMUNICATE (tau2's definition): each fact must appear in some assistant message with text,
lower-cased, in the message lower-cased with its commas removed - a plain substring test, so a
fact that itself holds a comma can never be found (theirs too). Pure function of the journal."""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.scoring.journal import Journal
from pipeline.scoring.results import CheckResult
from pipeline.trace import AssistantMessage


def said(fact: str, texts: Sequence[str]) -> bool:
    return any(fact.lower() in text.lower().replace(",", "") for text in texts)


def communicate_check(facts: Sequence[str], journal: Journal) -> CheckResult:
    texts = [e.content for e in journal.events
             if isinstance(e, AssistantMessage) and (e.content or "").strip()]
    missing = [f for f in facts if not said(f, [t or "" for t in texts])]
    detail = (f"every fact communicated ({len(facts)})" if not missing else
              f"not communicated: {', '.join(repr(f) for f in missing)}")
    return CheckResult("communicate", "communicate", not missing, None, None, detail,
                       "response")
