"""Checks of what the agent did, over the journal's calls: Function (forbidden and required
tools), Arguments (argument constraints, final values) and Invalidation (fresh calls)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from pipeline.catalog import ArgumentConstraint, FinalValue, ForbiddenTool
from pipeline.catalog.models import FreshCall, RequiredTool
from pipeline.scoring.check_ids import id_value
from pipeline.scoring.journal import Call, Journal
from pipeline.scoring.results import CheckResult
from pipeline.scoring.values import in_span, same_value


def forbidden_check(rule: ForbiddenTool, calls: Sequence[Call]) -> CheckResult:
    until = rule.until_turn
    span = f"{rule.from_turn}" if until is None else f"{rule.from_turn}..{until}"
    check_id = f"forbidden_tool:{rule.tool}@{span}"
    for call in calls:
        if call.name == rule.tool and in_span(call.turn, rule.from_turn, rule.until_turn):
            return CheckResult(check_id, "forbidden_tool", False, call.turn, call.step,
                               f"{rule.tool} called at turn {call.turn} step {call.step}",
                               "function")
    to = "" if until is None else f" to turn {until}"
    return CheckResult(check_id, "forbidden_tool", True, None, None,
                       f"no {rule.tool} call from turn {rule.from_turn}{to}", "function")


def required_check(rule: RequiredTool, calls: Sequence[Call], turns: int) -> CheckResult:
    where = f"@{rule.turn}" if rule.turn is not None else ""
    check_id = f"required_tool:{rule.tool}{where}"
    found = any(c.name == rule.tool and (rule.turn is None or c.turn == rule.turn)
                for c in calls)
    if found:
        return CheckResult(check_id, "required_tool", True, None, None,
                           f"{rule.tool} called", "function")
    return CheckResult(check_id, "required_tool", False, rule.turn or turns, None,
                       f"{rule.tool} never called{' at turn ' + str(rule.turn) if where else ''}",
                       "function")


def argument_check(rule: ArgumentConstraint, calls: Sequence[Call]) -> CheckResult:
    until = rule.until_turn
    span = f"{rule.from_turn}..{until if until is not None else ''}"
    target = rule.tool or "*"
    check_id = f"argument:{target}.{rule.argument}={id_value(rule.equals)}@{span}"
    seen = 0
    for call in calls:
        if not in_span(call.turn, rule.from_turn, until):
            continue
        if rule.tool is not None and call.name != rule.tool:
            continue
        if call.arguments is None or rule.argument not in call.arguments:
            continue
        seen += 1
        value = call.arguments[rule.argument]
        if not same_value(value, rule.equals):
            return CheckResult(check_id, "argument_constraint", False, call.turn, call.step,
                               f"{call.name}.{rule.argument}={id_value(value)} at turn "
                               f"{call.turn} step {call.step}, expected {id_value(rule.equals)}",
                               "arguments")
    return CheckResult(check_id, "argument_constraint", True, None, None,
                       f"{seen} call(s) passed {rule.argument}={id_value(rule.equals)}",
                       "arguments")


def final_check(rule: FinalValue, calls: Sequence[Call], turns: int) -> CheckResult:
    """Violations of a final value are placed at the end of the dialog (its last turn)."""
    check_id = f"final:{rule.tool}.{rule.argument}={id_value(rule.equals)}"
    last = next((c for c in reversed(calls) if c.name == rule.tool), None)
    if last is None:
        return CheckResult(check_id, "final_value", False, turns, None,
                           f"no {rule.tool} call at all", "arguments")
    value = (last.arguments or {}).get(rule.argument)
    if not same_value(value, rule.equals):
        return CheckResult(check_id, "final_value", False, turns, None,
                           f"last {rule.tool}.{rule.argument}={id_value(value)} (turn "
                           f"{last.turn}), expected {id_value(rule.equals)}", "arguments")
    return CheckResult(check_id, "final_value", True, None, None,
                       f"last {rule.tool}.{rule.argument}={id_value(value)}", "arguments")


def fresh_call_check(rule: FreshCall, journal: Journal) -> CheckResult:
    check_id = f"fresh_call:{rule.tool}@{rule.turn}"
    for call in journal.calls:
        if call.turn == rule.turn and call.name == rule.tool and all(
                same_value((call.arguments or {}).get(k), v) for k, v in rule.arguments.items()):
            return CheckResult(check_id, "fresh_call", True, None, None,
                               f"{rule.tool} called again at turn {rule.turn}", "invalidation")
    return CheckResult(check_id, "fresh_call", False, rule.turn, journal.reply_step(rule.turn),
                       f"turn {rule.turn} answered without a new {rule.tool} with "
                       f"{json.dumps(rule.arguments, ensure_ascii=False)}: stale results reused",
                       "invalidation")
