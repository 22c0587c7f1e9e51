"""What a check says: its result, the closed sets of check kinds and scores, and their versions.

Every check feeds one of the five scores of the changing-intent method: State, Invalidation,
Function, Arguments,
Response.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

CheckKind = Literal[
    "forbidden_tool", "required_tool", "argument_constraint", "final_value", "fresh_call",
    "trajectory", "state_value", "summary_term", "said_vs_done", "clarification",
    "response_phrase", "reply_language", "agent_outcome",
    "case_decision", "case_required_term", "case_forbidden_term", "case_schema",
    "database_state", "database_effects", "diagnostic", "communicate",
    "action", "value_source", "silent_side_effect", "denied_but_done", "check_error",
    "grounding", "forbidden_claim",
]
ScoreName = Literal["state", "invalidation", "function", "arguments", "response"]
SCORES: tuple[ScoreName, ...] = ("state", "invalidation", "function", "arguments", "response")
VIOLATION_ORDER: tuple[ScoreName, ...] = (
    "state", "function", "arguments", "response", "invalidation"
)
"""Tie-break of violations at one (turn, step): the memory update precedes the planner; an
invalidation failure is an omission seen only at the reply, so what the reply itself did wrong
ranks before it."""
CHECK_VERSIONS: dict[CheckKind, int] = {
    # 2: calls the sandbox refused no longer count as actions (only the journal does);
    # checks about turns a dialog ended by an agent error never reached no longer apply;
    # reply_language by the share of the user's alphabet; said_vs_done sees present-tense
    # claims (the domains' claims.py). summary_term 3: phrasings; a summary that copies its
    # update request fails. said_vs_done 3: a reply that writes tool-result markup itself
    # (a fabricated tool result) fails. Whole words in the domain's languages (their word
    # endings): summary_term 4 ("auditorium" keeps no "auditor"), response_phrase 3 (and the
    # same claim said in another of the domain's languages); clarification 3: a request for
    # input without "?" asks; said_vs_done 4: every bundled domain's claims in Russian and
    # English; reply_language 3: a user turn too short to tell is judged by the dialog's
    # language; reply_language 4: a reply with no prose is judged by all its letters
    # (blind labels of real trials, issue 25)
    "forbidden_tool": 2, "required_tool": 2, "argument_constraint": 2, "final_value": 2,
    "fresh_call": 2, "trajectory": 2, "state_value": 3, "summary_term": 4, "said_vs_done": 5,
    "clarification": 4, "response_phrase": 3, "reply_language": 4, "agent_outcome": 1,
    "case_decision": 1, "case_required_term": 1, "case_forbidden_term": 1, "case_schema": 1,
    "database_state": 1, "database_effects": 1, "diagnostic": 1,
    "communicate": 1, "action": 1, "check_error": 1,
    # 1: a checked argument of a write call, or an id a reply names, appeared before it in a
    # user turn or a tool result; a write that took effect is reported by some reply; no reply
    # denies or defers a write of its turn that took effect
    # silent_side_effect 2: a write no reply reports fails also when the agent's own error
    # ended the dialog before any reply (blind labels of real trials, issue 25). From the same
    # labels: said_vs_done 5 and denied_but_done 2 (guest_pass: updating and confirming the
    # draft said as done, updating or confirming it as still to come; clinic: a refusal after the
    # booking),
    # clarification 4 ("выберите комнату" / "choose one" asks)
    "value_source": 1, "silent_side_effect": 2, "denied_but_done": 2,
    # state_value 3: a value the domain accepts as the golden one's (its state_equivalent:
    # the cheapest said by sort_by alone, a limit of 1 left null) passes (issue 43)
    # 1: the entities a reply names and the attribute values it states, against the tool
    # results (the domains' entities.py); a scenario's forbidden claims read as such facts
    "grounding": 1, "forbidden_claim": 1,
}
"""Version of each check kind's logic, written on every ``checks`` row: bump a kind's number
whenever what it passes or fails changes, so verdicts of different versions are told apart."""
KIND_OF_ID_PREFIX: dict[str, CheckKind] = {
    "forbidden_tool": "forbidden_tool", "required_tool": "required_tool",
    "argument": "argument_constraint", "final": "final_value", "fresh_call": "fresh_call",
    "trajectory": "trajectory", "state": "state_value", "memory": "state_value",
    "summary": "summary_term", "said_vs_done": "said_vs_done", "clarification": "clarification",
    "response": "response_phrase", "reply_language": "reply_language", "outcome": "agent_outcome",
    "decision_mismatch": "case_decision", "missing_required": "case_required_term",
    "contains_forbidden": "case_forbidden_term", "schema": "case_schema",
    "database": "database_state", "diagnostic": "diagnostic", "communicate": "communicate",
    "action": "action", "value_source": "value_source",
    "silent_side_effect": "silent_side_effect", "denied_but_done": "denied_but_done",
    "check_error": "check_error", "grounding": "grounding", "claim": "forbidden_claim",
}
"""Check kind by the prefix of its check id (``<prefix>:...`` or ``<prefix>@turn``)."""


@dataclass(frozen=True)
class CheckResult:
    check_id: str
    check_kind: CheckKind
    passed: bool
    turn: int | None
    step: int | None
    detail: str
    score: ScoreName | None = None
    counted: bool = True
    """Whether the check counts toward ``passed``, the five scores and the first violation;
    False: a recorded signal only (tau2's ACTION when ``action`` is not in the reward basis)."""

    @property
    def version(self) -> int:
        """The version of this kind's logic (``CHECK_VERSIONS``)."""
        return CHECK_VERSIONS[self.check_kind]
