"""Every check of a scenario over a trial's journal: a pure function of (trace, scenario,
memory mode), re-runnable offline from the warehouse.

An agent error that ended the dialog early is itself a check, at the point where the dialog
ended, and checks about turns (or the end) the dialog never reached do not apply.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pipeline.catalog import Domain, Scenario
from pipeline.catalog.models import RewardComponent
from pipeline.scoring.actions import (
    argument_check,
    final_check,
    forbidden_check,
    fresh_call_check,
    required_check,
)
from pipeline.scoring.cases import case_checks, reply_text
from pipeline.scoring.communicate import communicate_check
from pipeline.scoring.database import database_checks
from pipeline.scoring.expected_actions import action_check
from pipeline.scoring.failures import guarded
from pipeline.scoring.grounding import forbidden_claim_checks, grounding_checks
from pipeline.scoring.journal import Journal, Reply
from pipeline.scoring.replies import (
    clarification_check,
    dialog_alphabet,
    language_check,
    phrase_checks,
    said_vs_done_check,
)
from pipeline.scoring.reported import denied_but_done_check, silent_side_effect_check
from pipeline.scoring.results import CheckKind, CheckResult, ScoreName
from pipeline.scoring.sources import value_source_checks
from pipeline.scoring.state import memory_failure_check, state_checks, summary_checks
from pipeline.scoring.trajectory import trajectory_check

OUTCOME_SCORES: dict[str, ScoreName] = {
    "empty_response": "response", "output_truncated": "response", "context_limit": "response",
    "tool_loop": "function", "step_limit": "function",
}
"""Which score an agent error that ended the dialog fails (``invalid_memory`` is the State
check ``memory:invalid``)."""


def outcome_check(error_kind: str, journal: Journal) -> CheckResult | None:
    """The agent error that ended the dialog, at the point where it ended."""
    score_name = OUTCOME_SCORES.get(error_kind)
    if score_name is None or not journal.events:
        return None
    last = journal.events[-1]
    return CheckResult(f"outcome:{error_kind}@{last.turn}", "agent_outcome", False, last.turn,
                       last.step, f"the dialog ended at turn {last.turn} step {last.step}: "
                       f"{error_kind}", score_name)


@dataclass(frozen=True)
class Played:
    """How far the dialog got: every turn, or up to ``last_turn`` when an agent error ended it."""

    last_turn: int
    ended_early: bool

    def reached(self, turn: int | None) -> bool:
        """A check about ``turn`` (None: the end of the dialog) applies to what was played."""
        if not self.ended_early:
            return True
        return turn is not None and turn <= self.last_turn

    def judges(self, turn: int | None, check: CheckResult) -> bool:
        """Whether a check that something happens at ``turn`` applies: the turn the error cut
        short counts only when it already happened there (it might have come later)."""
        if not self.ended_early:
            return True
        return turn is not None and (turn < self.last_turn
                                     or (turn == self.last_turn and check.passed))


def run_checks(journal: Journal, scenario: Scenario, memory_mode: str, ended_by: str | None,
               domain: Domain, snapshots: Mapping[str, Any] | None = None) -> list[CheckResult]:
    """Every check of ``scenario`` over ``journal``. ``ended_by``: the agent error that ended
    the dialog, if one did; ``snapshots``: a database domain's database before and after. A
    check that raises leaves a ``check_error`` row in its place (``failures.guarded``)."""
    played = Played(journal.last_turn, ended_by is not None)
    results: list[CheckResult] = []
    for stage, produce in _stages(journal, scenario, memory_mode, ended_by, domain, played,
                                  snapshots or {}):
        results += guarded(stage, produce)
    return by_reward_basis(results, scenario.reward_basis)


_Stage = tuple[str, Callable[[], Iterable[CheckResult]]]


def _stages(journal: Journal, scenario: Scenario, memory_mode: str, ended_by: str | None,
            domain: Domain, played: Played, snapshots: Mapping[str, Any]) -> list[_Stage]:
    """The scenario's checks as named stages, in the order their rows are written."""
    calls = journal.calls
    turns = max(journal.last_turn, len(scenario.turns))
    rules = scenario.expectations
    return [
        ("memory", lambda: _present(memory_failure_check(journal))),
        ("outcome", lambda: _present(outcome_check(ended_by, journal)
                                     if ended_by is not None else None)),
        ("forbidden_tool", lambda: [forbidden_check(r, calls) for r in rules.forbidden_tools]),
        ("required_tool", lambda: [c for r in rules.required_tools
                                   if played.judges(r.turn, c := required_check(r, calls,
                                                                                turns))]),
        ("trajectory", lambda: _trajectory(scenario, journal, played)),
        ("argument", lambda: [argument_check(r, calls) for r in rules.argument_constraints]),
        ("final", lambda: [final_check(r, calls, turns) for r in rules.final_values
                           if played.reached(None)]),
        ("fresh_call", lambda: [c for r in rules.fresh_calls
                                if played.judges(r.turn, c := fresh_call_check(r, journal))]),
        ("turns", lambda: _turn_checks(journal, scenario, memory_mode, played, domain)),
        ("said_vs_done", lambda: [said_vs_done_check(journal, domain)]),
        ("grounding", lambda: grounding_checks(journal, domain)),
        ("implicit", lambda: _implicit_checks(journal, scenario, domain, played)),
        ("case", lambda: case_checks(journal, scenario.case)
         if scenario.case is not None and (journal.replies or not played.ended_early) else []),
        ("communicate", lambda: [communicate_check(rules.communicate, journal)]
         if rules.communicate and played.reached(None) else []),
        ("action", lambda: [action_check(rules.actions, journal.attempted,
                                         "action" in scenario.reward_basis)]
         if rules.actions and played.reached(None) else []),
        ("database", lambda: database_checks(journal, scenario.database, snapshots, domain)
         if scenario.database is not None else []),
    ]


def _present(check: CheckResult | None) -> list[CheckResult]:
    return [check] if check is not None else []


def _trajectory(scenario: Scenario, journal: Journal, played: Played) -> list[CheckResult]:
    rule = scenario.expectations.trajectory
    if rule is None:
        return []
    trajectory = trajectory_check(rule, journal.calls)
    return [trajectory] if trajectory.passed or played.reached(trajectory.turn) else []


ALWAYS_COUNTED: frozenset[CheckKind] = frozenset({"agent_outcome", "state_value",
                                                  "summary_term"})
"""Checks that count whatever a benchmark's reward basis says: an agent error ended the dialog
(tau2: reward 0 unless it ended normally), and our memory modes' own failures (a memory the
benchmark does not know; chat mode has none)."""
KINDS_OF_COMPONENT: Mapping[RewardComponent, frozenset[CheckKind]] = {
    "database": frozenset({"database_state", "database_effects", "diagnostic"}),
    "communicate": frozenset({"communicate"}),
    "action": frozenset({"action"}),
    "nl_assertion": frozenset(),  # the judge's: a signal of its own, never a check
}


def by_reward_basis(results: list[CheckResult],
                    basis: Sequence[RewardComponent]) -> list[CheckResult]:
    """An imported benchmark's scenario (a ``reward_basis``) is passed by its own components
    only: our other checks (said vs done, the reply's language...) are still run and recorded,
    as signals (``counted = False``), so ``passed`` is the benchmark's verdict."""
    if not basis:
        return results
    counted = ALWAYS_COUNTED.union(*(KINDS_OF_COMPONENT[c] for c in basis))
    return [r if r.check_kind in counted or not r.counted else replace(r, counted=False)
            for r in results]


def _turn_checks(journal: Journal, scenario: Scenario, memory_mode: str,
                 played: Played, domain: Domain) -> list[CheckResult]:
    results: list[CheckResult] = []
    dialog = dialog_alphabet([t.user for t in scenario.turns])
    for number, turn in enumerate(scenario.turns, start=1):
        if not played.reached(number) or (turn.if_refused is not None
                                          and number > journal.last_turn):
            break  # the dialog ended: by an agent error, or a conditional turn not played
        if memory_mode == "structured":
            results += state_checks(number, turn, journal.memory_after.get(number),
                                    domain.state_equivalent)
        elif memory_mode == "summary":
            results += summary_checks(number, turn, journal.memory_after.get(number),
                                      domain.languages)
        reply = journal.replies.get(number)
        if reply is None and played.ended_early:
            continue  # the turn ended in the error before any reply: nothing to judge
        clarification = clarification_check(number, turn, reply, domain.languages)
        if clarification is not None:
            results.append(clarification)
        results += phrase_checks(number, turn, reply, domain)
        results += forbidden_claim_checks(number, turn.forbidden_claims, reply, journal, domain)
        language = language_check(number, turn, _visible(reply, scenario), dialog)
        if language is not None:
            results.append(language)
    return results


def _implicit_checks(journal: Journal, scenario: Scenario, domain: Domain,
                     played: Played) -> list[CheckResult]:
    """Values with a source, and what the replies leave out or take back about the writes."""
    replies = [r for r in (_visible(r, scenario) for r in journal.final_replies())
               if r is not None]
    recorded = scenario.case.recorded if scenario.case is not None else []
    results = value_source_checks(journal, domain)
    silent = silent_side_effect_check(journal, domain, replies, played.ended_early, recorded)
    denied = denied_but_done_check(journal, domain, replies, recorded)
    return results + [c for c in (silent, denied) if c is not None]


def _visible(reply: Reply | None, scenario: Scenario) -> Reply | None:
    """A case's reply as its text rules read it (its JSON's strings): its language."""
    if reply is None or scenario.case is None:
        return reply
    return reply._replace(text=reply_text(reply.text))
