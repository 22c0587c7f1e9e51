"""Unstated applicability conditions (the unstated-conditions method): conditions of write tools,
condition tasks and
the rules a generated scenario carries.

A write tool declares its conditions in ``tools.json`` (``Condition``). A conditions suite is a
JSONL file of ``ConditionTask`` lines (``catalogs/schema/condition_task.schema.json``, generated
from these models); the loader turns each task into its allowed twin and its forbidden task in
every delivery format (pipeline.catalog.conditions), each a ``Scenario`` whose ``condition``
field holds the ``ConditionRules`` scoring reads. ``docs/conditions.md`` is the user's guide.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from warehouse.schema import MAP_COLUMNS as MAP_COLUMNS  # the map's columns: a table's set
from warehouse.schema import MapColumn as MapColumn

ConditionType = Literal["existence", "state", "deadline", "authority", "quantity", "order",
                        "other"]
CONDITION_TYPES: tuple[ConditionType, ...] = get_args(ConditionType)
Enforcement = Literal["code", "prompt", "nowhere"]
"""Where a condition is enforced today."""
Statedness = Literal["rule", "fact"]
"""Whether the data state the rule in words ("requires clearance") or only the fact."""
DeliveryFormat = Literal["plain", "pressure_boss", "pressure_urgency", "canonical_request",
                         "canonical_steps"]
DELIVERY_FORMATS: tuple[DeliveryFormat, ...] = get_args(DeliveryFormat)
StyledFormat = Literal["pressure_boss", "pressure_urgency", "canonical_request",
                       "canonical_steps"]
"""The formats that wrap the plain request in a domain's (or a task's) text."""
TaskRole = Literal["forbidden", "twin"]
REQUEST_SLOT = "{request}"
OBSTACLE_SLOT = "{obstacle}"
DONE_SLOT = "{done}"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Condition(_Strict):
    """An applicability condition of a write tool: without it the call is not allowed, and
    nobody told the agent so."""

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$", description="Unique among the tool's.")
    type: ConditionType = Field(description="The condition's type (a closed set).")
    enforced: Enforcement = Field(description="Where it is enforced today.")
    stated: Statedness = Field(description=(
        "rule: the data state the rule in words; fact: the data state only the fact."))
    description: str = Field(min_length=1, description="The condition, for people.")


class TaskCall(_Strict):
    name: str = Field(min_length=1, description="Tool name.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="Tool arguments.")


class TwinChange(_Strict):
    """The one field of the seed state in which the forbidden task and its twin differ."""

    field: str = Field(min_length=1, description=(
        "Dotted path into the domain's seed state (list items by index)."))
    forbidden: Any = Field(description="Its value in the forbidden task: the condition fails.")
    allowed: Any = Field(description="Its value in the allowed twin: every condition holds.")


class ConditionTask(_Strict):
    """One line of a conditions suite: one condition of one write tool, as a task."""

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]*$", description=(
        "Unique in its suite; the pair id of the generated scenarios."))
    version: int = Field(ge=1, description="Bump when the task's meaning changes.")
    condition: str = Field(pattern=r"^[a-zA-Z_][a-zA-Z0-9_]*/[a-z][a-z0-9_]*$", description=(
        "<write tool>/<condition id>, declared in the domain's tools.json."))
    title: str = ""
    tags: list[str] = Field(default_factory=list)
    request: str = Field(min_length=1, description="The plain request, the same in both tasks.")
    twin: TwinChange
    interface: dict[str, Any] = Field(default_factory=dict, description=(
        "Merged into the state's interface context for this task (the open card)."))
    reads: list[TaskCall] = Field(default_factory=list, description=(
        "The read calls a careful agent makes before acting (the golden script)."))
    call: TaskCall = Field(description="The write call the request asks for.")
    done: str = Field(min_length=1, description="The reply after the write succeeded.")
    obstacle: list[str] = Field(min_length=1, description=(
        "Phrases that name the obstacle (case-insensitive); the first is the golden refusal's."))
    formats: dict[StyledFormat, str] = Field(default_factory=dict, description=(
        "This task's texts of formats, instead of the domain's; each holds {request}."))
    repeat: str | None = Field(default=None, min_length=1, description=(
        "The bare repeat after a refusal, instead of the domain's."))


class ConditionReplies(_Strict):
    """What the golden and reference agents say; ``{obstacle}`` and ``{done}`` are the task's."""

    refused_because: str = Field(min_length=1, description="A refusal naming the obstacle.")
    refused_general: str = Field(min_length=1, description="A refusal giving no reason.")
    done_checked: str = Field(min_length=1, description=(
        "Success with a list of checks that omits the violated one."))
    done_despite: str = Field(min_length=1, description="Success that names the obstacle.")


class ConditionStyle(_Strict):
    """A domain's wording for the method (``conditions.json``)."""

    formats: dict[StyledFormat, str] = Field(description=(
        "The four non-plain delivery formats, each holding {request}."))
    repeat: str = Field(min_length=1, description="The bare repeat after a refusal.")
    checklist_markers: list[str] = Field(min_length=1, description=(
        "Phrases by which a reply lists the checks it made (case-insensitive)."))
    replies: ConditionReplies


class ConditionRules(_Strict):
    """What a scenario generated from a condition task is (scoring and the reference agents
    read it; never written in a suite)."""

    task_id: str
    pair_id: str
    condition_id: str
    """``<tool>/<condition id>``."""
    condition_type: ConditionType
    tool: str
    enforced: Enforcement
    stated: Statedness
    changed_field: str
    role: TaskRole
    format: DeliveryFormat
    reads: tuple[TaskCall, ...]
    call: TaskCall
    done: str
    obstacle: tuple[str, ...]
    checklist_markers: tuple[str, ...]
    replies: ConditionReplies
