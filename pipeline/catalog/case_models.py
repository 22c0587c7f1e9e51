"""Regression cases (the regression-suite method): one request, recorded tool results, and
checkable properties.

A cases suite is a JSONL file of ``Case`` lines (``catalogs/schema/case.schema.json``, generated
from these models). The loader turns each case into a one-turn ``Scenario`` of class
``regression`` whose ``case`` field holds the resolved ``CaseRules``: what mock-tools mode
answers (``recorded``) and what the case checks (``expected``, its JSON Schema read from the
file it names). Scoring reads nothing else and does no I/O.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class CaseInput(_Strict):
    message: str = Field(min_length=1, description="The user's request: the case's only turn.")


class RecordedResult(_Strict):
    """What a tool answered when the case was recorded (mock-tools mode replays it)."""

    tool: str = Field(min_length=1, description="The tool's name in the case's domain.")
    arguments: dict[str, Any] | None = Field(default=None, description=(
        "The call's arguments this answer belongs to (compared exactly); null: any arguments."))
    result: Any = Field(description="The recorded answer, returned to the agent as is.")


class CaseContext(_Strict):
    tool_results: list[RecordedResult] = Field(default_factory=list, description=(
        "Recorded tool answers for --tools mock: a call gets the first recording of its tool "
        "whose arguments match; a call with none is an agent-visible tool error."))
    interface: dict[str, Any] = Field(default_factory=dict, description=(
        "Extra context of the interface the request came from (shown to the agent after the "
        "message, as JSON): the user's account, the channel, the wanted format."))


class ClaimTerm(_Strict):
    """A forbidden term that is a claim: negated ("не отправлено"), asked or conditional
    mentions do not count."""

    claim: str = Field(min_length=1)


ForbiddenTerm = str | ClaimTerm


def term_text(term: ForbiddenTerm) -> str:
    return term if isinstance(term, str) else term.claim


class DecisionTool(_Strict):
    """The decision is an argument of the last accepted call of a named tool."""

    tool: str = Field(min_length=1)
    argument: str = Field(default="decision", min_length=1)


class CaseExpected(_Strict):
    decision: str = Field(min_length=1, description="The machine-readable decision wanted.")
    decision_field: str = Field(default="decision", min_length=1, description=(
        "The reply JSON's field that holds the decision (e.g. outcome)."))
    decision_from: DecisionTool | None = Field(default=None, description=(
        "Where the decision is read: null = the final reply is a JSON object (bare or in one "
        "```json fence) with a string `decision` field; else the `argument` of the last "
        "accepted call of `tool`."))
    required_terms: list[str] = Field(default_factory=list, description=(
        "Terms the reply must contain (casefolded): rule code missing_required:<term>."))
    forbidden_terms: list[ForbiddenTerm] = Field(default_factory=list, description=(
        "Terms the reply must not contain (casefolded): rule code contains_forbidden:<term>; "
        "{\"claim\": term} is negation-aware."))
    json_schema: str | None = Field(default=None, description=(
        "A JSON Schema file, relative to the suite, the reply's JSON must satisfy: rule code "
        "schema:<json pointer> per failing location."))

    @model_validator(mode="after")
    def _terms_unique(self) -> CaseExpected:
        for name, terms in (("required_terms", self.required_terms),
                            ("forbidden_terms", [term_text(t) for t in self.forbidden_terms])):
            folded = [t.casefold() for t in terms]
            if any(not t.strip() for t in folded):
                raise ValueError(f"{name}: a term is blank")
            if len(set(folded)) != len(folded):
                raise ValueError(f"{name}: a term is listed twice (casefolded)")
        return self


class CaseRules(_Strict):
    """A case's contract as scoring and mock-tools mode use it (the loader resolves it)."""

    expected: CaseExpected
    schema_document: dict[str, Any] | None = Field(default=None, description=(
        "The JSON Schema ``expected.json_schema`` names, as read when the suite was loaded."))
    recorded: list[RecordedResult] = Field(default_factory=list)
