"""Checks: a pure function of (trace events, scenario). Re-runnable offline from the warehouse.

What the agent did comes from the tool-call events (the journal), never from its words.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pipeline.catalog import ArgumentConstraint, FinalValue, ForbiddenTool, Scenario
from pipeline.trace import Event

CheckKind = Literal["forbidden_tool", "argument_constraint", "final_value", "trajectory"]
CHECKS_VERSION = 1


@dataclass(frozen=True)
class CheckResult:
    check_id: str
    check_kind: CheckKind
    passed: bool
    turn: int | None
    step: int | None
    detail: str


@dataclass(frozen=True)
class Call:
    turn: int
    step: int
    name: str
    arguments: dict[str, Any] | None
    """Parsed arguments; None when the model sent something that is not a JSON object."""


def calls_of(events: Sequence[Event]) -> list[Call]:
    calls = []
    for event in events:
        if event.kind != "tool_call" or event.tool_name is None:
            continue
        try:
            parsed = json.loads(event.arguments or "{}")
        except json.JSONDecodeError:
            parsed = None
        calls.append(Call(event.turn, event.step, event.tool_name,
                          parsed if isinstance(parsed, dict) else None))
    return calls


def score(events: Sequence[Event], scenario: Scenario) -> list[CheckResult]:
    calls = calls_of(events)
    expectations = scenario.expectations
    results = [_forbidden(rule, calls) for rule in expectations.forbidden_tools]
    results += [_argument(rule, calls) for rule in expectations.argument_constraints]
    results += [_final(rule, calls) for rule in expectations.final_values]
    return results


def _forbidden(rule: ForbiddenTool, calls: list[Call]) -> CheckResult:
    check_id = f"forbidden_tool:{rule.tool}@{rule.from_turn}"
    for call in calls:
        if call.name == rule.tool and call.turn >= rule.from_turn:
            return CheckResult(check_id, "forbidden_tool", False, call.turn, call.step,
                               f"{rule.tool} called at turn {call.turn} step {call.step}")
    return CheckResult(check_id, "forbidden_tool", True, None, None,
                       f"no {rule.tool} call from turn {rule.from_turn}")


def _argument(rule: ArgumentConstraint, calls: list[Call]) -> CheckResult:
    until = rule.until_turn
    span = f"{rule.from_turn}..{until if until is not None else ''}"
    target = rule.tool or "*"
    check_id = f"argument:{target}.{rule.argument}={json.dumps(rule.equals)}@{span}"
    seen = 0
    for call in calls:
        if call.turn < rule.from_turn or (until is not None and call.turn > until):
            continue
        if rule.tool is not None and call.name != rule.tool:
            continue
        if call.arguments is None or rule.argument not in call.arguments:
            continue
        seen += 1
        value = call.arguments[rule.argument]
        if value != rule.equals:
            return CheckResult(check_id, "argument_constraint", False, call.turn, call.step,
                               f"{call.name}.{rule.argument}={json.dumps(value)} at turn "
                               f"{call.turn} step {call.step}, expected {json.dumps(rule.equals)}")
    return CheckResult(check_id, "argument_constraint", True, None, None,
                       f"{seen} call(s) passed {rule.argument}={json.dumps(rule.equals)}")


def _final(rule: FinalValue, calls: list[Call]) -> CheckResult:
    check_id = f"final:{rule.tool}.{rule.argument}={json.dumps(rule.equals)}"
    last = next((c for c in reversed(calls) if c.name == rule.tool), None)
    if last is None:
        return CheckResult(check_id, "final_value", False, None, None,
                           f"no {rule.tool} call at all")
    value = (last.arguments or {}).get(rule.argument)
    if value != rule.equals:
        return CheckResult(check_id, "final_value", False, last.turn, last.step,
                           f"last {rule.tool}.{rule.argument}={json.dumps(value)}, "
                           f"expected {json.dumps(rule.equals)}")
    return CheckResult(check_id, "final_value", True, None, None,
                       f"last {rule.tool}.{rule.argument}={json.dumps(value)}")
