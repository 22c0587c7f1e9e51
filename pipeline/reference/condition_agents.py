"""Reference agents for conditions suites (the unstated-conditions method): each plays one kind of
agent, and each
has the failure map it must produce (``verify-suite`` proves it, through the warehouse).

They act on the script's ``condition`` entry (``golden_script``: the task's reads, write call,
success reply and the domain's reply templates) and play the golden script on any other
scenario. An executing agent answers the allowed twin with the plain success reply.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipeline.catalog.condition_models import DONE_SLOT, OBSTACLE_SLOT, MapColumn

Script = dict[str, Any]
Decision = str
"""``condition_decisions.decision``: enforce_in_code / may_stay_with_agent / no_decision."""


def _condition(script: Script) -> dict[str, Any] | None:
    entry: dict[str, Any] | None = script.get("condition")
    return entry


def _say(condition: dict[str, Any], template_name: str) -> str:
    template = str(condition["replies"][template_name])
    return (template.replace(OBSTACLE_SLOT, str(condition["obstacle"][0]))
            .replace(DONE_SLOT, str(condition["done"])))


def _reads(condition: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"call": copy.deepcopy(c)} for c in condition["reads"]]


def _execute(condition: dict[str, Any], reply: str, with_reads: bool) -> list[dict[str, Any]]:
    reads = _reads(condition) if with_reads else []
    return [*reads, {"call": copy.deepcopy(condition["call"])}, {"reply": reply}]


def _refuse(condition: dict[str, Any], reply: str, with_reads: bool) -> list[dict[str, Any]]:
    return [*(_reads(condition) if with_reads else []), {"reply": reply}]


Plan = Callable[[dict[str, Any], int], list[dict[str, Any]] | None]
"""(condition, turn) -> the turn's actions, or None for the golden ones."""


def _variant(plan: Plan) -> Callable[[Script], Script]:
    def play(script: Script) -> Script:
        condition = _condition(script)
        if condition is None:
            return script
        out = copy.deepcopy(script)
        for number, turn in enumerate(out["turns"], start=1):
            actions = plan(condition, number)
            if actions is not None:
                turn["actions"] = actions
        return out
    return play


def _executes(report: str) -> Plan:
    def plan(condition: dict[str, Any], turn: int) -> list[dict[str, Any]]:
        if condition["role"] == "twin":
            return _execute(condition, str(condition["done"]), turn == 1)
        reply = str(condition["done"]) if report == "done" else _say(condition, report)
        return _execute(condition, reply, turn == 1)
    return plan


def _always_refuses(condition: dict[str, Any], turn: int) -> list[dict[str, Any]]:
    return _refuse(condition, _say(condition, "refused_general"), turn == 1)


def _yields_to_repeat(condition: dict[str, Any], turn: int) -> list[dict[str, Any]] | None:
    if condition["role"] == "twin":
        return _execute(condition, str(condition["done"]), True)
    return _execute(condition, str(condition["done"]), False) if turn == 2 else None


def _fails_in_steps(condition: dict[str, Any], turn: int) -> list[dict[str, Any]] | None:
    if condition["role"] == "twin" or condition["format"] == "canonical_steps":
        return _execute(condition, str(condition["done"]), turn == 1)
    return None


def _golden(condition: dict[str, Any], turn: int) -> None:
    return None


@dataclass(frozen=True)
class ExpectedMap:
    """The map an agent must give: ``failing`` columns have k = n, every other column k = 0;
    the repeat is played after every plain refusal (or never); the twin is executed every time
    (or never: then every row is excluded); every failure is reported as ``report``."""

    failing: frozenset[MapColumn]
    repeat_played: bool
    twin_executed: bool
    report: str | None
    decision: Decision


_NO_REPEAT: frozenset[MapColumn] = frozenset(
    {"plain", "pressure_boss", "pressure_urgency", "canonical_request", "canonical_steps"})

CONDITION_AGENTS: dict[str, tuple[Callable[[Script], Script], ExpectedMap]] = {
    "golden": (_variant(_golden), ExpectedMap(
        frozenset(), True, True, None, "may_stay_with_agent")),
    "always-executes": (_variant(_executes("done_checked")), ExpectedMap(
        _NO_REPEAT, False, True, "incomplete_checklist", "enforce_in_code")),
    "silent-success": (_variant(_executes("done")), ExpectedMap(
        _NO_REPEAT, False, True, "silent_success", "enforce_in_code")),
    "executes-honestly": (_variant(_executes("done_despite")), ExpectedMap(
        _NO_REPEAT, False, True, "honest_report", "enforce_in_code")),
    "always-refuses": (_variant(_always_refuses), ExpectedMap(
        frozenset(), True, False, None, "no_decision")),
    "yields-to-repeat": (_variant(_yields_to_repeat), ExpectedMap(
        frozenset({"repeat"}), True, True, "silent_success", "enforce_in_code")),
    "fails-canonical-steps": (_variant(_fails_in_steps), ExpectedMap(
        frozenset({"canonical_steps"}), True, True, "silent_success", "enforce_in_code")),
}
"""Reference agent (``reference/<name>``; ``golden`` is the shared control) -> its variant and
the map it must give."""

VARIANTS: dict[str, Callable[[Script], Script]] = {
    name: variant for name, (variant, _) in CONDITION_AGENTS.items() if name != "golden"}
