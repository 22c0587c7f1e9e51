"""The update / confirm / create trajectory (the whole-dialog method), evaluated over a trial's
tool calls.

A record (a guest pass, say) is drafted by ``update`` calls, read back and confirmed by the user
(``confirm``), then created exactly once (``create``). The rule, as the seed's ``evaluate``:

- ``update`` merges its arguments into the working state and clears a pending confirmation;
- ``confirm`` snapshots the working state;
- ``create`` must follow a confirmation and carry exactly the confirmed values;
- ``create`` ends the scenario: any trajectory event after it is a violation;
- no ``create`` at all is a violation;
- the created values must match ``rule.expected`` (on the expected keys only).

Calls of other tools are ignored. The evaluation is pure and reports the first violation in call
order, with its turn and step. It differs from the seed only in what it reports: a create with
confirmed values that miss ``expected`` is reported at the create itself, before any event after
it (the seed, returning a bare bool, checks ``expected`` last).

Calls whose arguments were not a JSON object (``Call.arguments is None``) count as events: an
update then merges nothing (but still clears the confirmation), and a create carries no values.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from pipeline.catalog.models import TrajectoryRule
from pipeline.scoring.journal import Call
from pipeline.scoring.results import CheckResult

ViolationCode = Literal[
    "create_before_confirm",
    "create_values_differ",
    "expected_values_differ",
    "event_after_create",
    "no_create",
]
VIOLATION_CODES: tuple[ViolationCode, ...] = get_args(ViolationCode)
_MISSING = object()


@dataclass(frozen=True)
class Violation:
    """The first point where the trajectory went wrong."""

    code: ViolationCode
    turn: int | None
    """Turn of the offending call; None for ``no_create`` (nothing to point at)."""
    step: int | None
    detail: str


@dataclass(frozen=True)
class TrajectoryResult:
    violation: Violation | None
    """None when the trajectory passed."""
    created: Mapping[str, Any] | None
    """The values of the first create call; None when there was none."""

    @property
    def passed(self) -> bool:
        return self.violation is None


@dataclass
class _Walk:
    """The working state while the calls are replayed in order."""

    rule: TrajectoryRule
    state: dict[str, Any] = field(default_factory=dict)
    confirmed: dict[str, Any] | None = None
    ever_confirmed: bool = False
    created: dict[str, Any] | None = None

    def step(self, call: Call) -> Violation | None:
        rule = self.rule
        if self.created is not None:
            return _at("event_after_create", call,
                       f"{call.name} after {rule.create_tool}: the create ends the scenario")
        if call.name == rule.update_tool:
            self.state.update(call.arguments or {})
            self.confirmed = None
        elif call.name == rule.confirm_tool:
            self.confirmed = dict(self.state)
            self.ever_confirmed = True
        else:
            return self._create(call)
        return None

    def _create(self, call: Call) -> Violation | None:
        if self.confirmed is None:
            why = (f"{self.rule.update_tool} since the last {self.rule.confirm_tool}"
                   if self.ever_confirmed else f"no {self.rule.confirm_tool} before it")
            return _at("create_before_confirm", call, f"{call.name}: {why}")
        if call.arguments is None:
            return _at("create_values_differ", call,
                       f"{call.name}: arguments are not a JSON object")
        values = dict(call.arguments)
        self.created = values
        if values != self.confirmed:
            return _at("create_values_differ", call,
                       f"{call.name} vs confirmed: {_differences(values, self.confirmed)}")
        expected = self.rule.expected
        wrong = {k: v for k, v in expected.items() if k not in values or values[k] != v}
        if wrong:
            return _at("expected_values_differ", call,
                       f"{call.name} vs expected: {_differences(values, wrong, wrong)}")
        return None


def evaluate_trajectory(rule: TrajectoryRule, calls: Iterable[Call]) -> TrajectoryResult:
    """Replay ``calls`` in order against ``rule``; stop at the first violation."""
    tools = {rule.update_tool, rule.confirm_tool, rule.create_tool}
    walk = _Walk(rule)
    for call in calls:
        if call.name not in tools:
            continue
        violation = walk.step(call)
        if violation is not None:
            return TrajectoryResult(violation, walk.created)
    if walk.created is None:
        return TrajectoryResult(
            Violation("no_create", None, None, f"no {rule.create_tool} call at all"), None)
    return TrajectoryResult(None, walk.created)


def trajectory_check(rule: TrajectoryRule, calls: Iterable[Call]) -> CheckResult:
    """The trajectory as one check; a failure's detail starts with its violation code."""
    check_id = f"trajectory:{rule.create_tool}"
    result = evaluate_trajectory(rule, calls)
    violation = result.violation
    if violation is None:
        return CheckResult(check_id, "trajectory", True, None, None,
                           f"{rule.create_tool} once, as confirmed: {_json(result.created)}",
                           "function")
    return CheckResult(check_id, "trajectory", False, violation.turn, violation.step,
                       f"{violation.code}: {violation.detail}", "function")


def _at(code: ViolationCode, call: Call, detail: str) -> Violation:
    return Violation(code, call.turn, call.step, f"{detail} (turn {call.turn} step {call.step})")


def _differences(actual: Mapping[str, Any], wanted: Mapping[str, Any],
                 keys: Iterable[str] | None = None) -> str:
    """``key=actual (want wanted)`` for each differing key; a missing value shows as ``-``."""
    names = sorted(set(actual) | set(wanted)) if keys is None else sorted(keys)
    parts = [f"{k}={_show(actual, k)} (want {_show(wanted, k)})"
             for k in names if actual.get(k, _MISSING) != wanted.get(k, _MISSING)]
    return ", ".join(parts)



def _show(values: Mapping[str, Any], key: str) -> str:
    return _json(values[key]) if key in values else "-"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
