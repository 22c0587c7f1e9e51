"""Catalog data models: scenarios, their turns, golden actions and expectations.

These pydantic models are the one source of the catalog format: the JSON Schema under
``catalogs/schema/`` is generated from them (``agentsweep schema --write``), and a test fails if
the checked-in file drifts.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

ScenarioClass = Literal["reveal", "revision", "function_switch", "control", "regression"]


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


class Turn(Strict):
    user: str = Field(min_length=1, description="What the user says at this turn.")
    golden: list[GoldenAction] = Field(
        min_length=1,
        description="What a correct agent does at this turn: tool calls, then one reply.",
    )

    @field_validator("golden")
    @classmethod
    def _ends_with_one_reply(cls, golden: list[GoldenAction]) -> list[GoldenAction]:
        replies = [i for i, a in enumerate(golden) if isinstance(a, ReplyAction)]
        if replies != [len(golden) - 1]:
            raise ValueError("golden actions must be tool calls followed by exactly one reply")
        return golden


class ForbiddenTool(Strict):
    """No call of ``tool`` from turn ``from_turn`` on (a state-changing one vetoes the trial)."""

    tool: str
    from_turn: int = Field(default=1, ge=1)


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


class TrajectoryRule(Strict):
    """Update / confirm / create trajectory (seed 001): the record is created exactly once,
    only after a confirmation, with exactly the confirmed values, and nothing happens after it.
    Tool calls map to events: ``update_tool`` (its arguments are the updated values),
    ``confirm_tool``, ``create_tool`` (its arguments are the created values)."""

    update_tool: str
    confirm_tool: str
    create_tool: str
    expected: dict[str, Any] = Field(
        default_factory=dict, description="Values the created record must have."
    )


class Expectations(Strict):
    forbidden_tools: list[ForbiddenTool] = Field(default_factory=list)
    argument_constraints: list[ArgumentConstraint] = Field(default_factory=list)
    final_values: list[FinalValue] = Field(default_factory=list)
    trajectory: TrajectoryRule | None = None


class Scenario(Strict):
    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", description="Unique in its suite.")
    version: int = Field(ge=1, description="Bump when the scenario's meaning changes.")
    domain: str = Field(description="Folder under catalogs/ holding the tools and seed state.")
    scenario_class: ScenarioClass = Field(alias="class")
    title: str = ""
    tags: list[str] = Field(default_factory=list)
    turns: list[Turn] = Field(min_length=1)
    expectations: Expectations = Field(default_factory=Expectations)

    @model_validator(mode="after")
    def _turns_in_range(self) -> Scenario:
        count = len(self.turns)
        expectations = self.expectations
        for rule in [*expectations.forbidden_tools, *expectations.argument_constraints]:
            if rule.from_turn > count:
                raise ValueError(f"from_turn {rule.from_turn} is past the last turn ({count})")
        for constraint in expectations.argument_constraints:
            until = constraint.until_turn
            if until is not None and not constraint.from_turn <= until <= count:
                raise ValueError(f"until_turn {until} is outside {constraint.from_turn}..{count}")
        return self


class ToolSpec(Strict):
    """A domain tool as the model sees it, plus how the sandbox treats it."""

    name: str = Field(pattern=r"^[a-zA-Z_][a-zA-Z0-9_]*$")
    description: str
    kind: Literal["read", "write"] = Field(description="write = state-changing: intercepted.")
    parameters: dict[str, Any] = Field(description="JSON Schema of the arguments.")
    intercept_response: dict[str, Any] | None = Field(
        default=None, description="What an intercepted write answers on success."
    )

    @model_validator(mode="after")
    def _write_tools_answer(self) -> ToolSpec:
        if self.kind == "write" and self.intercept_response is None:
            raise ValueError("a write tool needs an intercept_response")
        return self


class ToolCatalog(Strict):
    tools: list[ToolSpec] = Field(min_length=1)
