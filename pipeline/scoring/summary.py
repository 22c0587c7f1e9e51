"""From check results to the five scores, the veto, the first violation and diagnostics.

Pure functions of (journal, scenario, checks): recomputable offline from the warehouse.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pipeline.catalog import Domain, Scenario
from pipeline.scoring.journal import Journal
from pipeline.scoring.results import SCORES, VIOLATION_ORDER, CheckKind, CheckResult, ScoreName
from pipeline.scoring.state import memory_failure_check
from pipeline.scoring.values import in_span

_LATE = 1 << 30


@dataclass(frozen=True)
class TrialScores:
    score_state: int | None
    score_invalidation: int | None
    score_function: int | None
    score_arguments: int | None
    score_response: int | None
    vetoed: bool
    first_violation_turn: int | None
    first_violation_step: int | None
    first_violation_check: str | None
    steps_to_correct_continuation: int | None
    repeated_searches: int
    forbidden_calls_attempted: int
    clarification_questions: int
    failure_origin: str | None

    def row(self) -> dict[str, Any]:
        return asdict(self)


UNKNOWN_SCORES = TrialScores(None, None, None, None, None, False, None, None, None, None, 0, 0, 0,
                             None)
"""A trial's scores when summarizing them raised (a ``check_error`` row says so)."""


def five_scores(checks: Sequence[CheckResult]) -> dict[ScoreName, int | None]:
    """Each score is 1 when all its checks pass, 0 when one fails, null when it has none."""
    out: dict[ScoreName, int | None] = {}
    for name in SCORES:
        mine = [c for c in checks if c.score == name]
        out[name] = None if not mine else int(all(c.passed for c in mine))
    return out


CONSEQUENCES: frozenset[CheckKind] = frozenset({"grounding"})
"""Checks whose failure is often the consequence of another at the same point: a reply names
rooms no result gave because the search was skipped or its results reused (``fresh_call``),
so at one point these rank after every other check."""


def first_violation(checks: Sequence[CheckResult]) -> CheckResult | None:
    """The earliest failed check by (turn, step); a state update precedes the planner's steps,
    and at one point a consequence (``CONSEQUENCES``) ranks last and VIOLATION_ORDER breaks the
    other ties. A failure with no point (a missing final
    call) sorts last."""
    failed = [c for c in checks if not c.passed]
    if not failed:
        return None
    order = {name: i for i, name in enumerate(VIOLATION_ORDER)}
    return min(failed, key=lambda c: (
        c.turn if c.turn is not None else _LATE,
        c.step if c.step is not None else _LATE,
        c.check_kind in CONSEQUENCES,
        order.get(c.score or "response", len(order)),
    ))


def vetoed(journal: Journal, scenario: Scenario, domain: Domain) -> bool:
    """A forbidden state-changing call (one that took effect) fails the whole trial, whatever
    the other scores."""
    for rule in scenario.expectations.forbidden_tools:
        tool = domain.tool(rule.tool)
        if tool is None or tool.kind != "write":
            continue
        if any(c.name == rule.tool and in_span(c.turn, rule.from_turn, rule.until_turn)
               for c in journal.calls):
            return True
    return False


def steps_to_correct(journal: Journal, checks: Sequence[CheckResult],
                     turning_point: int | None) -> int | None:
    """Model steps from the turning point until the first step at which no check failed."""
    if turning_point is None:
        return None
    bad = {(c.turn, c.step) for c in checks if not c.passed and c.turn is not None}
    bad_turns = {c.turn for c in checks if not c.passed and c.turn is not None and c.step is None}
    count = 0
    for turn, step in journal.model_steps(turning_point):
        if (turn, step) in bad or turn in bad_turns:
            count += 1
            continue
        return count
    return None


def repeated_calls(journal: Journal, domain: Domain) -> int:
    """Read-tool calls repeating an earlier call's tool and arguments exactly."""
    seen: set[tuple[str, str]] = set()
    repeats = 0
    for call in journal.calls:
        spec = domain.tool(call.name)
        if spec is None or spec.kind != "read":
            continue
        key = (call.name, json.dumps(call.arguments, sort_keys=True, ensure_ascii=False))
        repeats += key in seen
        seen.add(key)
    return repeats


def forbidden_attempts(journal: Journal, scenario: Scenario) -> int:
    """Calls of a tool inside its forbidden span, blocked and refused ones included."""
    rules = scenario.expectations.forbidden_tools
    return sum(1 for c in journal.attempted
               if any(c.name == r.tool and in_span(c.turn, r.from_turn, r.until_turn)
                      for r in rules))


def summarize_trial(journal: Journal, scenario: Scenario, domain: Domain,
                    checks: Sequence[CheckResult], memory_mode: str) -> TrialScores:
    scores = five_scores(checks)
    memory_failed = memory_failure_check(journal) is not None
    first = first_violation(checks)
    origin = None
    if memory_mode == "structured" and (first is not None or memory_failed):
        origin = "memory" if memory_failed or (first and first.score == "state") else "planner"
    return TrialScores(
        score_state=scores["state"],
        score_invalidation=scores["invalidation"],
        score_function=scores["function"],
        score_arguments=scores["arguments"],
        score_response=scores["response"],
        vetoed=vetoed(journal, scenario, domain),
        first_violation_turn=first.turn if first else None,
        first_violation_step=first.step if first else None,
        first_violation_check=first.check_id if first else None,
        steps_to_correct_continuation=steps_to_correct(journal, checks, scenario.turning_point),
        repeated_searches=repeated_calls(journal, domain),
        forbidden_calls_attempted=forbidden_attempts(journal, scenario),
        clarification_questions=journal.questions(),
        failure_origin=origin,
    )
