"""State checks: the agent's memory after each turn (structured state path by path, summary
terms), and a memory update that was refused and never repaired."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pipeline.catalog.domains import StateEquivalent
from pipeline.catalog.models import Turn, phrasings
from pipeline.catalog.state_paths import state_leaves
from pipeline.scoring.journal import Journal
from pipeline.scoring.languages import Language, has_phrase
from pipeline.scoring.results import CheckResult
from pipeline.scoring.values import same_value
from pipeline.trace import DIALOG_LINE_PREFIXES, SUMMARY_SCAFFOLD


def _lookup(state: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(state, dict) or part not in state:
            return None
        state = state[part]
    return state


def memory_failure_check(journal: Journal) -> CheckResult | None:
    """The memory update of a turn was refused and never repaired (the trial ended there):
    a State failure, read from the trace like every other check."""
    for turn in sorted(journal.memory_updates):
        rejected = journal.memory_updates[turn].rejected
        if rejected is not None:
            return CheckResult(f"memory:invalid@{turn}", "state_value", False, turn, 0,
                               rejected, "state")
    return None


def state_checks(turn_no: int, turn: Turn, actual_json: str | None,
                 equivalent: StateEquivalent | None = None) -> list[CheckResult]:
    """Every leaf of the turn's golden state against the agent's state; ``equivalent``: the
    domain's accepted encodings (a value that differs and says the same passes, so noted)."""
    if turn.state is None:
        return []
    try:
        actual = json.loads(actual_json) if actual_json else None
    except json.JSONDecodeError:
        actual = None
    results = []
    for path, expected in state_leaves(turn.state):
        value = _lookup(actual, path)
        same = same_value(value, expected)
        accepted = (not same and equivalent is not None
                    and equivalent(path, value, expected, actual, turn.state))
        ok = same or accepted
        detail = (f"{path}={json.dumps(value, ensure_ascii=False)}"
                  + ("" if same else f", expected {json.dumps(expected, ensure_ascii=False)}")
                  + (" (the domain accepts it as the same)" if accepted else ""))
        results.append(CheckResult(f"state:{path}@{turn_no}", "state_value", ok,
                                   None if ok else turn_no, None if ok else 0, detail, "state"))
    return results


def copies_request(summary: str) -> bool:
    """The summary repeats its own update request ("Previous summary:", "Dialog so far:",
    "New user message:", or the request's dialog lines): a small model often does, and such a
    text is no summary, whatever phrases the copied request happens to contain."""
    return any(line.lstrip().startswith((*SUMMARY_SCAFFOLD, *DIALOG_LINE_PREFIXES))
               for line in summary.splitlines())


def summary_checks(turn_no: int, turn: Turn, summary: str | None,
                   languages: Sequence[Language] = ()) -> list[CheckResult]:
    """The summary keeps (or drops) the turn's terms, each matched as whole words in the
    domain's languages ("auditor" is not kept by "auditorium")."""
    text = summary or ""
    copied = copies_request(summary or "")
    results = []
    for kind, phrases in (("requires", turn.summary_requires), ("forbids", turn.summary_forbids)):
        for phrase in phrases:
            ways = phrasings(phrase)
            found = next((w for w in ways if has_phrase(text, w, languages)), None)
            ok = not copied and (found is not None) == (kind == "requires")
            detail = ("the summary copies its update request" if copied else
                      f"summary keeps {found!r}" if kind == "requires" and ok else
                      f"summary lost {' / '.join(map(repr, ways))}" if kind == "requires" else
                      f"summary has no {ways[0]!r}" if ok else f"summary still has {found!r}")
            results.append(CheckResult(f"summary:{kind}:{ways[0]}@{turn_no}", "summary_term", ok,
                                       None if ok else turn_no, None if ok else 0, detail,
                                       "state"))
    return results
