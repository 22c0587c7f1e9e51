"""Catalog data models: scenarios, their turns, golden actions and expectations.

These pydantic models are the one source of the catalog format: the JSON Schema under
``catalogs/schema/`` is generated from them (``agentsweep schema --write``), and a test fails if
the checked-in file drifts.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from pipeline.catalog.case_models import CaseContext, CaseExpected, CaseInput, CaseRules
from pipeline.catalog.condition_models import Condition, ConditionRules
from pipeline.catalog.database_models import DatabaseRules, SandboxStyle

ScenarioClass = Literal["reveal", "revision", "function_switch", "control", "regression",
                        "condition", "imported"]
RewardComponent = Literal["database", "communicate", "action", "nl_assertion"]
"""What an imported benchmark's reward multiplies (tau2's reward_basis): the database check,
the communicated facts, the expected actions, and natural-language assertions (the judge's)."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class ToolCall(Strict):
    name: str = Field(min_length=1, description="Tool name.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="Tool arguments.")


class CallAction(Strict):
    """The agent calls a tool."""

    call: ToolCall


class ReplyAction(Strict):
    """The agent answers the user; ends the turn."""

    reply: str = Field(min_length=1)


GoldenAction = CallAction | ReplyAction


Clarification = Literal["allowed", "forbidden", "required"]
Phrase = str | list[str]
"""A phrase, or one meaning in several phrasings (a list; the first names the check)."""


def ends_with_one_reply(golden: list[GoldenAction]) -> list[GoldenAction]:
    """``golden`` when it is tool calls followed by exactly one reply; else ValueError."""
    replies = [i for i, a in enumerate(golden) if isinstance(a, ReplyAction)]
    if replies != [len(golden) - 1]:
        raise ValueError("golden actions must be tool calls followed by exactly one reply")
    return golden


def phrasings(phrase: Phrase) -> list[str]:
    return [phrase] if isinstance(phrase, str) else list(phrase)


class ForbiddenClaim(Strict):
    """A claim a reply must not make, as a fact about an entity: ``attribute`` = ``value`` for
    any entity (or only ``entity``), in the words of the domain's entities (its
    ``entities.py``). The grounding reading finds it said as a sentence ("cedar suits a
    confidential meeting") and as one more item of an entity's attribute list."""

    attribute: str = Field(min_length=1, description="An attribute the domain declares.")
    value: str = Field(min_length=1, description="One of its values, as the domain names it.")
    entity: str | None = Field(default=None, description=(
        "Only this entity (its name as the tools give it); null: any entity, invented ones "
        "included."))


class Turn(Strict):
    user: str = Field(min_length=1, description="What the user says at this turn.")
    golden: list[GoldenAction] = Field(
        min_length=1,
        description="What a correct agent does at this turn: tool calls, then one reply.",
    )
    summary: str | None = Field(
        default=None, description="Golden goal summary after this user message (summary mode)."
    )
    state: dict[str, Any] | None = Field(
        default=None,
        description="Golden structured state after this user message (structured mode); "
        "validated against the domain's state schema. Its leaf values are checked.",
    )
    summary_requires: list[Phrase] = Field(
        default_factory=list,
        description="Phrases the summary after this turn must contain (case-insensitive, whole "
        "words: the last word may take its language's endings); a list is one requirement "
        "said in several ways (any of them).",
    )
    summary_forbids: list[Phrase] = Field(
        default_factory=list,
        description="Phrases the summary after this turn must not contain (case-insensitive, "
        "whole words); a list is one prohibition said in several ways (none of them).",
    )
    clarification: Clarification = Field(
        default="allowed",
        description="Whether the agent's reply may, must not, or must ask the user a question.",
    )
    response_forbids: list[str] = Field(
        default_factory=list,
        description="Claims the reply must not make (case-insensitive phrases, whole words); "
        "the same claim in another of the domain's languages (its PHRASE_CLAIMS) counts too. "
        "The fallback for what forbidden_claims cannot say.",
    )
    forbidden_claims: list[ForbiddenClaim] = Field(
        default_factory=list,
        description="Facts the reply must not state about any entity (an attribute value: a "
        "room with soundproofing), however it says them: a sentence or a list of features.",
    )
    if_refused: str | None = Field(
        default=None,
        description="A conditional turn: played only when the previous turn attempted no call "
        "of this write tool (decided from the tool journal, not from the reply's text).",
    )

    @field_validator("golden")
    @classmethod
    def _ends_with_one_reply(cls, golden: list[GoldenAction]) -> list[GoldenAction]:
        return ends_with_one_reply(golden)


class ForbiddenTool(Strict):
    """No call of ``tool`` from turn ``from_turn`` on, up to ``until_turn`` (inclusive) when set:
    "not before the user asks at turn 3" is ``from_turn: 1, until_turn: 2``. A state-changing
    tool called in its span vetoes the trial."""

    tool: str
    from_turn: int = Field(default=1, ge=1)
    until_turn: int | None = Field(default=None, ge=1)


class ArgumentConstraint(Strict):
    """From ``from_turn`` (to ``until_turn``, inclusive, when set) every call of ``tool`` (of
    any tool when null) that passes ``argument`` passes it equal to ``equals``."""

    argument: str
    equals: Any
    from_turn: int = Field(default=1, ge=1)
    until_turn: int | None = Field(default=None, ge=1)
    tool: str | None = None


class FinalValue(Strict):
    """The last call of ``tool`` in the trial passed ``argument`` equal to ``equals``."""

    tool: str
    argument: str
    equals: Any


class FreshCall(Strict):
    """Invalidation: at ``turn``, before its reply, ``tool`` is called (again) with arguments
    that include ``arguments`` - results from before the change are not reused."""

    turn: int = Field(ge=1)
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class RequiredTool(Strict):
    """Function: ``tool`` is called at ``turn`` (any turn when null)."""

    tool: str
    turn: int | None = Field(default=None, ge=1)


class TrajectoryRule(Strict):
    """Update / confirm / create trajectory (the whole-dialog method): the record is created
    exactly once,
    only after a confirmation, with exactly the confirmed values, and nothing happens after it.
    Tool calls map to events: ``update_tool`` (its arguments are the updated values),
    ``confirm_tool``, ``create_tool`` (its arguments are the created values)."""

    update_tool: str
    confirm_tool: str
    create_tool: str
    expected: dict[str, Any] = Field(
        default_factory=dict, description="Values the created record must have."
    )


class ExpectedAction(Strict):
    """A tool call the agent must make at some point (tau2's ACTION): some call of the tool
    whose arguments equal ``arguments`` on ``compare_args``."""

    name: str = Field(min_length=1, description="Tool name.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="Expected arguments.")
    compare_args: list[str] | None = Field(default=None, description=(
        "The arguments compared; null: every argument the agent's call has (tau2's rule)."))


class Expectations(Strict):
    forbidden_tools: list[ForbiddenTool] = Field(default_factory=list)
    argument_constraints: list[ArgumentConstraint] = Field(default_factory=list)
    final_values: list[FinalValue] = Field(default_factory=list)
    fresh_calls: list[FreshCall] = Field(default_factory=list)
    required_tools: list[RequiredTool] = Field(default_factory=list)
    trajectory: TrajectoryRule | None = None
    communicate: list[str] = Field(default_factory=list, description=(
        "Facts each of which some reply of the agent must contain (lower-cased, with the "
        "reply's commas removed: a plain substring test, tau2's COMMUNICATE)."))
    actions: list[ExpectedAction] = Field(default_factory=list, description=(
        "Tool calls the agent must have made, refused ones included (tau2's ACTION, check "
        "`action`). It counts toward passed only when `action` is in the scenario's "
        "reward_basis; otherwise it is recorded and never changes passed."))


class RevisionHint(Strict):
    """A value superseded at ``turn``: ``old`` -> ``new`` (for mutant-stale-value)."""

    turn: int = Field(ge=1)
    arguments: list[str] = Field(description="Tool arguments that carry the value.")
    state_path: str | None = Field(default=None, description="Dotted path in the state.")
    old: Any
    new: Any


class SwitchHint(Strict):
    """A function switch at ``turn`` forbids ``call`` (for mutant-ignores-switch)."""

    turn: int = Field(ge=1)
    call: ToolCall
    permission: str | None = Field(default=None, description="State permission it revokes.")


class NegationHint(Strict):
    """A "do not ..." from ``turn`` on (for mutant-drops-negation)."""

    turn: int = Field(ge=1)
    summary_find: str
    summary_replace: str
    permission: str | None = None


class FalseClaimHint(Strict):
    """At ``turn`` the reply is replaced by ``reply``, which claims something the journal does
    not hold (for mutant-false-claim: "silent success"), or, for mutant-ungrounded-attribute
    and mutant-invented-entity, something the tool results do not hold."""

    turn: int = Field(ge=1)
    reply: str = Field(min_length=1)


class WrongAnswerHint(Strict):
    """At ``turn`` the golden actions are replaced by ``actions`` (tool calls, then one reply):
    an answer that breaks the contract (for mutant-wrong-answer)."""

    turn: int = Field(ge=1)
    actions: list[GoldenAction] = Field(min_length=1)

    @field_validator("actions")
    @classmethod
    def _ends_with_one_reply(cls, actions: list[GoldenAction]) -> list[GoldenAction]:
        return ends_with_one_reply(actions)


class StrayWriteHint(Strict):
    """At ``turn`` one extra write ``call`` before the reply (for mutant-stray-write)."""

    turn: int = Field(ge=1)
    call: ToolCall


class MutationHints(Strict):
    revision: RevisionHint | None = None
    switch: SwitchHint | None = None
    negation: NegationHint | None = None
    false_claim: FalseClaimHint | None = None
    wrong_answer: WrongAnswerHint | None = None
    stray_write: StrayWriteHint | None = None
    ungrounded_attribute: FalseClaimHint | None = None
    """A reply that gives an entity an attribute value its tool result does not hold."""
    invented_entity: FalseClaimHint | None = None
    """A reply that names an entity no tool result or user turn introduced."""


MutantName = Literal[
    "mutant-stale-value",
    "mutant-ignores-switch",
    "mutant-stale-results",
    "mutant-drops-negation",
    "mutant-over-reset",
    "mutant-over-confirmation",
    "mutant-false-claim",
    "mutant-wrong-answer",
    "mutant-stray-write",
    "mutant-repeats-write",
    "mutant-skips-reread",
    "mutant-drops-last-write",
    "mutant-changes-write-argument",
    "mutant-ungrounded-attribute",
    "mutant-invented-entity",
]
MemoryModeName = Literal["chat", "summary", "structured"]
ALL_MODES: tuple[MemoryModeName, ...] = ("chat", "summary", "structured")


class Catch(Strict):
    """Mutation verification: ``mutant`` must fail this scenario with a first violation whose
    check id starts with ``check``, in each of ``modes``."""

    mutant: MutantName
    check: str = Field(min_length=1)
    modes: list[MemoryModeName] = Field(default_factory=lambda: list(ALL_MODES))


class SimulatedUser(Strict):
    """A user played by a simulator model: what the simulated user knows, wants and how they
    behave (an imported benchmark's user instructions, rendered as one text)."""

    instructions: str = Field(min_length=1)


class ImportedFrom(Strict):
    """Where an imported scenario came from, and what of it our checks do not read."""

    benchmark: str = Field(min_length=1, description="e.g. tau2-bench.")
    commit: str = Field(min_length=1, description="The source repository's commit.")
    task_id: str = Field(min_length=1, description="The task's id in the source.")
    task: dict[str, Any] = Field(description="The source task as it was (for export and audit).")


class Scenario(Strict):
    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", description="Unique in its suite.")
    version: int = Field(ge=1, description="Bump when the scenario's meaning changes.")
    domain: str = Field(description="Folder under catalogs/ holding the tools and seed state.")
    scenario_class: ScenarioClass = Field(alias="class")
    title: str = ""
    tags: list[str] = Field(default_factory=list)
    critical: bool = Field(default=False, description=(
        "A release-critical scenario: a new regression in it blocks the gate."))
    turns: list[Turn] = Field(min_length=1)
    case: SkipJsonSchema[CaseRules | None] = Field(default=None, exclude=True)
    """The regression case this scenario was built from (a cases suite; never written in a
    scenario suite: the JSON Schema has no such field)."""
    condition: SkipJsonSchema[ConditionRules | None] = Field(default=None, exclude=True)
    """The condition task this scenario was generated from (a conditions suite; never written
    in a scenario suite)."""
    database: DatabaseRules | None = Field(default=None, description=(
        "A database domain's expected state, faults and diagnostics (docs/orders.md)."))
    state_changes: dict[str, Any] = Field(default_factory=dict, description=(
        "Changes to the domain's seed state this scenario starts from: dotted path (list items "
        "by index) -> value; every path must exist in the seed state."))
    expectations: Expectations = Field(default_factory=Expectations)
    turning_point: int | None = Field(
        default=None, ge=1, description="Turn where the intent changes; null for none."
    )
    mutation: MutationHints = Field(default_factory=MutationHints)
    catches: list[Catch] = Field(
        default_factory=list, description="Which check must catch which mutant."
    )
    step_limit: int | None = Field(default=None, ge=1, description=(
        "Model steps a turn of this scenario may need; the trial's limit is the larger of this "
        "and the sweep's."))
    user: SimulatedUser | None = Field(default=None, description=(
        "A simulated user's instructions (for a user simulator; docs/tau2.md)."))
    nl_assertions: list[str] = Field(default_factory=list, description=(
        "Natural-language assertions for the judge (a separate signal, never in passed)."))
    reward_basis: list[RewardComponent] = Field(default_factory=list, description=(
        "An imported benchmark's reward components (its own combined reward)."))
    imported_from: ImportedFrom | None = None

    @model_validator(mode="after")
    def _turns_in_range(self) -> Scenario:
        count = len(self.turns)
        expectations = self.expectations
        starts = [r.from_turn for r in expectations.forbidden_tools]
        starts += [r.from_turn for r in expectations.argument_constraints]
        for start in starts:
            if start > count:
                raise ValueError(f"from_turn {start} is past the last turn ({count})")
        spans: list[ArgumentConstraint | ForbiddenTool] = [*expectations.argument_constraints,
                                                            *expectations.forbidden_tools]
        for rule in spans:
            until = rule.until_turn
            if until is not None and not rule.from_turn <= until <= count:
                raise ValueError(f"until_turn {until} is outside {rule.from_turn}..{count}")
        return self


ArgumentSource = Literal["checked", "free"]
"""Whether a write tool's argument must have a source (checked: an id, a recipient, the value
appeared earlier in a user turn or a tool result) or may be the agent's own words (free: a
message body, a date the user said in words)."""


class ToolSpec(Strict):
    """A domain tool as the model sees it, plus how the sandbox treats it."""

    name: str = Field(pattern=r"^[a-zA-Z_][a-zA-Z0-9_]*$")
    description: str
    kind: Literal["read", "write"] = Field(description="write = state-changing: intercepted.")
    parameters: dict[str, Any] = Field(description="JSON Schema of the arguments.")
    intercept_response: dict[str, Any] | None = Field(
        default=None, description="What an intercepted write answers on success."
    )
    conditions: list[Condition] = Field(default_factory=list, description=(
        "Applicability conditions of a write tool (the unstated-conditions method; "
        "docs/conditions.md)."))
    argument_sources: dict[str, ArgumentSource] = Field(default_factory=dict, description=(
        "A write tool's arguments by whether their value needs a source: checked (ids, "
        "recipients: the value appeared before the call in a user turn or a tool result) or "
        "free (a message body). An argument not named here is not checked."))

    @field_validator("argument_sources")
    @classmethod
    def _sources_of_known_write_arguments(cls, sources: dict[str, ArgumentSource],
                                          info: ValidationInfo) -> dict[str, ArgumentSource]:
        if sources and info.data.get("kind") != "write":
            raise ValueError("only a write tool declares argument_sources")
        known = (info.data.get("parameters") or {}).get("properties", {})
        unknown = sorted(set(sources) - set(known))
        if unknown:
            raise ValueError(f"argument_sources names arguments the tool does not have: "
                             f"{unknown} (its parameters: {sorted(known)})")
        return sources

    @model_validator(mode="after")
    def _conditions_of_writes(self) -> ToolSpec:
        if self.conditions and self.kind != "write":
            raise ValueError("only a write tool has applicability conditions")
        ids = [c.id for c in self.conditions]
        if len(ids) != len(set(ids)):
            raise ValueError(f"condition ids repeat: {sorted(i for i in ids if ids.count(i) > 1)}")
        return self

    def condition(self, condition_id: str) -> Condition | None:
        return next((c for c in self.conditions if c.id == condition_id), None)


class ToolCatalog(Strict):
    sandbox: SandboxStyle = Field(default="intercept", description=(
        "intercept: write tools are recorded and answered with intercept_response, nothing "
        "changes; database: they run against a per-trial copy of the domain's db.sql."))
    tools: list[ToolSpec] = Field(min_length=1)
    reply_ids: list[str] = Field(default_factory=list, description=(
        "Regular expressions of the ids a reply may name (an order number, a payment "
        "method): each one a final reply names must have appeared before it in a user turn or "
        "a tool result."))

    @field_validator("reply_ids")
    @classmethod
    def _compiled(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"reply id pattern {pattern!r} is no regular expression: "
                                 f"{exc}") from None
        return patterns

    @model_validator(mode="after")
    def _intercepted_writes_answer(self) -> ToolCatalog:
        if self.sandbox == "intercept":
            for tool in self.tools:
                if tool.kind == "write" and tool.intercept_response is None:
                    raise ValueError(f"write tool {tool.name}: an intercepted write tool needs "
                                     "an intercept_response")
        return self


class ReferenceReplies(Strict):
    """What a domain's reference mutants say when a defect replaces a reply with the domain's
    own words (``reference_replies.json``; pipeline.reference.mutants). A mutant whose reply the
    domain does not give plays the golden script."""

    over_reset: str | None = Field(default=None, min_length=1, description=(
        "mutant-over-reset: after a change, asks again for every fact of the request."))
    over_confirmation: str | None = Field(default=None, min_length=1, description=(
        "mutant-over-confirmation: asks to confirm an unambiguous revision instead of acting."))



class Case(Strict):
    """One line of a cases suite (the regression-suite method): a single request and its checkable
    contract."""

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", description="Unique in its suite.")
    version: int = Field(ge=1, description="Bump when the case's meaning changes.")
    title: str = ""
    input: CaseInput
    context: CaseContext = Field(default_factory=CaseContext)
    expected: CaseExpected
    tags: list[str] = Field(default_factory=list)
    critical: bool = Field(default=False, description=(
        "A critical case: a new failure of it blocks a release (the gate)."))
    golden: list[GoldenAction] = Field(min_length=1, description=(
        "The golden reference answer: tool calls, then one reply that passes every rule."))
    database: DatabaseRules | None = Field(default=None, description=(
        "A database domain: the expected state (initial + the one allowed change), the effect "
        "count, faults and diagnostics (docs/orders.md)."))
    mutation: MutationHints = Field(default_factory=MutationHints, description=(
        "Defects for the mutant reference models (the case's one turn is turn 1)."))
    catches: list[Catch] = Field(
        default_factory=list, description="Which rule code must catch which mutant."
    )

    @field_validator("golden")
    @classmethod
    def _golden_ends_with_one_reply(cls, golden: list[GoldenAction]) -> list[GoldenAction]:
        return ends_with_one_reply(golden)
