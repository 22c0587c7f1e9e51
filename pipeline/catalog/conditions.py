"""Conditions suites (the unstated-conditions method): each line a condition task, turned into its
allowed twin and
its forbidden task in every delivery format.

A suite is a conditions suite when its first line is a condition task (it has ``condition``);
then every line must be one. A task is checked like a scenario line (its JSON Schema, the
pydantic model), then against its domain - the folder the suite sits in: the condition is
declared on the write tool the task calls, the twin's field exists in the seed state and its two
values differ, the calls fit their tools. Errors are ``file:line: field: message``.

The pair is generated, never written twice: ``<id>.twin`` (the field at its allowed value, the
plain request, the write expected), ``<id>.plain`` (the field at its forbidden value, the plain
request, then the domain's bare repeat played only if the agent refused) and one forbidden
scenario per styled format. Every one carries the ``ConditionRules`` scoring reads.
"""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from pipeline.catalog.cases import domain_of_suite, with_interface
from pipeline.catalog.condition_models import (
    DELIVERY_FORMATS,
    DONE_SLOT,
    OBSTACLE_SLOT,
    REQUEST_SLOT,
    Condition,
    ConditionRules,
    ConditionStyle,
    ConditionTask,
    DeliveryFormat,
    TaskCall,
    TaskRole,
)
from pipeline.catalog.domains import Domain
from pipeline.catalog.errors import CatalogError
from pipeline.catalog.golden import check_call
from pipeline.catalog.lines import validate_line
from pipeline.catalog.models import Scenario
from pipeline.catalog.state_paths import get_path, has_path, set_path
from pipeline.util.hashing import sha256_json

CONDITION_MARK = "condition"
"""A suite line with this key (and no ``turns``) is a condition task."""
TWIN = "twin"


def is_condition_task(raw: Any) -> bool:
    return isinstance(raw, dict) and CONDITION_MARK in raw and "turns" not in raw


@cache
def _validator() -> Draft202012Validator:
    return Draft202012Validator(ConditionTask.model_json_schema(by_alias=True))


def parse_condition_task(path: Path, number: int, raw: Any) -> list[tuple[Scenario, str]]:
    """The scenarios (with their content hashes) of one task line; CatalogError naming the
    line and the field."""
    where = str(path)
    task = validate_line(ConditionTask, _validator(), where, number, raw)
    domain = domain_of_suite(path, number, "conditions")
    style = _check_against_domain(where, number, task, domain)
    scenarios = [_scenario(task, domain, style, "twin", "plain")]
    scenarios += [_scenario(task, domain, style, "forbidden", f) for f in DELIVERY_FORMATS]
    return [(s, _content_hash(s)) for s in scenarios]


def _content_hash(scenario: Scenario) -> str:
    """The generated scenario's content: its turns and state (the domain's format texts and
    seed state included) and its condition rules - a changed wording is a changed trial."""
    rules = scenario.condition.model_dump(mode="json") if scenario.condition else None
    return sha256_json({"scenario": scenario.model_dump(mode="json", by_alias=True),
                        "condition": rules})


def _check_against_domain(where: str, number: int, task: ConditionTask, domain: Domain
                          ) -> ConditionStyle:
    style = domain.condition_style
    if style is None:
        raise CatalogError(where, number, CONDITION_MARK, f"domain {domain.name} has no "
                           "conditions.json (the formats, the repeat and the replies)")
    tool_name, _, condition_id = task.condition.partition("/")
    tool = domain.tool(tool_name)
    if tool is None or tool.kind != "write":
        raise CatalogError(where, number, CONDITION_MARK, f"{tool_name!r} is not a write tool "
                           f"of domain {domain.name}")
    if tool.condition(condition_id) is None:
        declared = ", ".join(c.id for c in tool.conditions) or "none"
        raise CatalogError(where, number, CONDITION_MARK, f"{tool_name} declares no condition "
                           f"{condition_id!r} in tools.json (it declares: {declared})")
    if task.call.name != tool_name:
        raise CatalogError(where, number, "call.name", f"the task's write call must call "
                           f"{tool_name}, the tool of its condition")
    check_call(where, number, ("call.name", "call.arguments"), task.call.name,
               task.call.arguments, domain)
    for index, read in enumerate(task.reads):
        check_call(where, number, (f"reads.{index}.name", f"reads.{index}.arguments"),
                   read.name, read.arguments, domain)
    _check_twin(where, number, task, domain)
    for name, text in task.formats.items():
        if REQUEST_SLOT not in text:
            raise CatalogError(where, number, f"formats.{name}",
                               f"the format's text must hold {REQUEST_SLOT}")
    return style


def _check_twin(where: str, number: int, task: ConditionTask, domain: Domain) -> None:
    twin = task.twin
    if not has_path(domain.seed_state, twin.field):
        raise CatalogError(where, number, "twin.field", f"{twin.field!r} is not a field of "
                           f"the seed state of domain {domain.name} (state.json)")
    if twin.forbidden == twin.allowed:
        raise CatalogError(where, number, "twin.allowed", "the twin would not differ from the "
                           "forbidden task: its allowed value equals the forbidden one")


def _declared(domain: Domain, task: ConditionTask) -> Condition:
    """The condition a checked task names (``_check_against_domain`` proved it exists)."""
    tool_name, _, condition_id = task.condition.partition("/")
    tool = domain.tool(tool_name)
    condition = tool.condition(condition_id) if tool is not None else None
    assert condition is not None, task.condition
    return condition


def state_for(domain: Domain, task: ConditionTask, role: TaskRole) -> dict[str, Any]:
    """The seed state of ``role``: the domain's, with the twin's field at its value."""
    state = copy.deepcopy(dict(domain.seed_state))
    set_path(state, task.twin.field, task.twin.allowed if role == TWIN else task.twin.forbidden)
    return state


def _interface(state: dict[str, Any], task: ConditionTask) -> dict[str, Any]:
    base = state.get("interface")
    return {**(base if isinstance(base, dict) else {}), **task.interface}


def _text(task: ConditionTask, style: ConditionStyle, fmt: DeliveryFormat) -> str:
    if fmt == "plain":
        return task.request
    template = task.formats.get(fmt) or style.formats[fmt]
    return template.replace(REQUEST_SLOT, task.request)


def _calls(calls: tuple[TaskCall, ...] | list[TaskCall]) -> list[dict[str, Any]]:
    return [{"call": {"name": c.name, "arguments": dict(c.arguments)}} for c in calls]


def _scenario(task: ConditionTask, domain: Domain, style: ConditionStyle, role: TaskRole,
              fmt: DeliveryFormat) -> Scenario:
    tool_name = task.condition.partition("/")[0]
    condition = _declared(domain, task)
    state = state_for(domain, task, role)
    text = with_interface(_text(task, style, fmt), _interface(state, task))
    refusal = style.replies.refused_because.replace(OBSTACLE_SLOT, task.obstacle[0])
    if role == TWIN:
        turns = [{"user": text, "summary": task.request,
                  "golden": [*_calls(task.reads), *_calls([task.call]), {"reply": task.done}]}]
        expectations: dict[str, Any] = {"required_tools": [{"tool": tool_name, "turn": 1}]}
    else:
        turns = [{"user": text, "summary": task.request,
                  "golden": [*_calls(task.reads), {"reply": refusal}]}]
        if fmt == "plain":
            turns.append({"user": task.repeat or style.repeat, "summary": task.request,
                          "if_refused": tool_name, "golden": [{"reply": refusal}]})
        expectations = {"forbidden_tools": [{"tool": tool_name}]}
    scenario_id = f"{task.id}.{TWIN if role == TWIN else fmt}"
    return Scenario.model_validate({
        "id": scenario_id, "version": task.version, "domain": domain.name,
        "class": "condition", "title": task.title, "tags": list(task.tags),
        "turns": turns, "expectations": expectations,
        "state_changes": {task.twin.field: get_path(state, task.twin.field)},
        "condition": ConditionRules(
            task_id=task.id, pair_id=task.id, condition_id=task.condition,
            condition_type=condition.type, tool=tool_name, enforced=condition.enforced,
            stated=condition.stated, changed_field=task.twin.field, role=role, format=fmt,
            reads=tuple(task.reads), call=task.call, done=task.done,
            obstacle=tuple(task.obstacle), checklist_markers=tuple(style.checklist_markers),
            replies=style.replies),
    })


def reply_with(template: str, rules: ConditionRules) -> str:
    """A reply template with the task's obstacle and success reply filled in."""
    return template.replace(OBSTACLE_SLOT, rules.obstacle[0]).replace(DONE_SLOT, rules.done)
