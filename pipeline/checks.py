"""Checks: a pure function of (trace events, scenario, memory mode). Re-runnable offline.

What the agent did comes from the tool-call events (the journal), never from its words. Every
check feeds one of the five scores of seed 000: State, Invalidation, Function, Arguments,
Response. ``pipeline.scoring`` turns check results into scores, the veto and the first
violation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pipeline.catalog import (
    ArgumentConstraint,
    Domain,
    FinalValue,
    ForbiddenTool,
    Scenario,
    load_domain,
)
from pipeline.catalog.models import FreshCall, RequiredTool, Turn, phrasings
from pipeline.memory import DIALOG_LINE_PREFIXES, SUMMARY_SCAFFOLD
from pipeline.trace import Event

CheckKind = Literal[
    "forbidden_tool", "required_tool", "argument_constraint", "final_value", "fresh_call",
    "trajectory", "state_value", "summary_term", "said_vs_done", "clarification",
    "response_phrase", "reply_language", "agent_outcome",
]
ScoreName = Literal["state", "invalidation", "function", "arguments", "response"]
SCORES: tuple[ScoreName, ...] = ("state", "invalidation", "function", "arguments", "response")
VIOLATION_ORDER: tuple[ScoreName, ...] = (
    "state", "function", "arguments", "response", "invalidation"
)
"""Tie-break of violations at one (turn, step): the memory update precedes the planner; an
invalidation failure is an omission seen only at the reply, so what the reply itself did wrong
ranks before it."""
CHECKS_VERSION = 2
CHECK_VERSIONS: dict[CheckKind, int] = {
    # 2: calls the sandbox refused no longer count as actions (only the journal does);
    # checks about turns a dialog ended by an agent error never reached no longer apply;
    # reply_language by the share of the user's alphabet; said_vs_done sees present-tense
    # claims (the domains' claims.py). summary_term 3: phrasings; a summary that copies its
    # update request fails. said_vs_done 3: a reply that writes tool-result markup itself
    # (a fabricated tool result) fails
    "forbidden_tool": 2, "required_tool": 2, "argument_constraint": 2, "final_value": 2,
    "fresh_call": 2, "trajectory": 2, "state_value": 2, "summary_term": 3, "said_vs_done": 3,
    "clarification": 2, "response_phrase": 2, "reply_language": 2, "agent_outcome": 1,
}
"""Version of each check kind's logic, written on every ``checks`` row: bump a kind's number
whenever what it passes or fails changes, so verdicts of different versions are told apart."""
KIND_OF_ID_PREFIX: dict[str, CheckKind] = {
    "forbidden_tool": "forbidden_tool", "required_tool": "required_tool",
    "argument": "argument_constraint", "final": "final_value", "fresh_call": "fresh_call",
    "trajectory": "trajectory", "state": "state_value", "memory": "state_value",
    "summary": "summary_term", "said_vs_done": "said_vs_done", "clarification": "clarification",
    "response": "response_phrase", "reply_language": "reply_language", "outcome": "agent_outcome",
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


@dataclass(frozen=True)
class Call:
    turn: int
    step: int
    name: str
    arguments: dict[str, Any] | None
    """Parsed arguments; None when the model sent something that is not a JSON object."""


def _parse(arguments: str | None) -> dict[str, Any] | None:
    try:
        parsed = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) else None


def calls_of(events: Sequence[Event], include_refused: bool = False) -> list[Call]:
    """Tool calls in order, as the journal has them: a call the memory gate blocked or the
    sandbox refused (unknown tool, arguments that are not JSON or break the schema) had no
    effect, so it is left out unless ``include_refused`` (attempts, for diagnostics)."""
    return [
        Call(e.turn, e.step, e.tool_name, _parse(e.arguments))
        for e in events
        if e.kind == "tool_call" and e.tool_name is not None
        and (include_refused or e.tool_error is None)
    ]


def last_turn(events: Sequence[Event]) -> int:
    return max((e.turn for e in events), default=0)


# --- Function -----------------------------------------------------------------------------

def in_span(turn: int, from_turn: int, until_turn: int | None) -> bool:
    return turn >= from_turn and (until_turn is None or turn <= until_turn)


def forbidden_check(rule: ForbiddenTool, calls: list[Call]) -> CheckResult:
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


def required_check(rule: RequiredTool, calls: list[Call], turns: int) -> CheckResult:
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


# --- Arguments ----------------------------------------------------------------------------

def argument_check(rule: ArgumentConstraint, calls: list[Call]) -> CheckResult:
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
        if not _equal(value, rule.equals):
            return CheckResult(check_id, "argument_constraint", False, call.turn, call.step,
                               f"{call.name}.{rule.argument}={json.dumps(value)} at turn "
                               f"{call.turn} step {call.step}, expected {json.dumps(rule.equals)}",
                               "arguments")
    return CheckResult(check_id, "argument_constraint", True, None, None,
                       f"{seen} call(s) passed {rule.argument}={json.dumps(rule.equals)}",
                       "arguments")


def final_check(rule: FinalValue, calls: list[Call], turns: int) -> CheckResult:
    """Violations of a final value are placed at the end of the dialog (its last turn)."""
    check_id = f"final:{rule.tool}.{rule.argument}={json.dumps(rule.equals)}"
    last = next((c for c in reversed(calls) if c.name == rule.tool), None)
    if last is None:
        return CheckResult(check_id, "final_value", False, turns, None,
                           f"no {rule.tool} call at all", "arguments")
    value = (last.arguments or {}).get(rule.argument)
    if not _equal(value, rule.equals):
        return CheckResult(check_id, "final_value", False, turns, None,
                           f"last {rule.tool}.{rule.argument}={json.dumps(value)} (turn "
                           f"{last.turn}), expected {json.dumps(rule.equals)}", "arguments")
    return CheckResult(check_id, "final_value", True, None, None,
                       f"last {rule.tool}.{rule.argument}={json.dumps(value)}", "arguments")


def _equal(actual: Any, expected: Any) -> bool:
    """Equality, with lists compared as sets (feature lists carry no order)."""
    if isinstance(actual, list) and isinstance(expected, list):
        try:
            return sorted(map(json.dumps, actual)) == sorted(map(json.dumps, expected))
        except TypeError:
            return actual == expected
    return bool(actual == expected)


# --- Invalidation -------------------------------------------------------------------------

def fresh_call_check(rule: FreshCall, calls: list[Call], events: Sequence[Event]) -> CheckResult:
    check_id = f"fresh_call:{rule.tool}@{rule.turn}"
    for call in calls:
        if call.turn == rule.turn and call.name == rule.tool and all(
                _equal((call.arguments or {}).get(k), v) for k, v in rule.arguments.items()):
            return CheckResult(check_id, "fresh_call", True, None, None,
                               f"{rule.tool} called again at turn {rule.turn}", "invalidation")
    reply_step = max((e.step for e in events if e.turn == rule.turn
                      and e.kind == "assistant_message"), default=None)
    return CheckResult(check_id, "fresh_call", False, rule.turn, reply_step,
                       f"turn {rule.turn} answered without a new {rule.tool} with "
                       f"{json.dumps(rule.arguments, ensure_ascii=False)}: stale results reused",
                       "invalidation")


# --- State (memory) -----------------------------------------------------------------------

IGNORED_STATE_KEYS = frozenset({"revision", "superseded", "status"})


def _leaves(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        out: list[tuple[str, Any]] = []
        for key, item in value.items():
            if not prefix and key in IGNORED_STATE_KEYS:
                continue
            out.extend(_leaves(item, f"{prefix}{key}."))
        return out
    return [(prefix.rstrip("."), value)]


def _lookup(state: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(state, dict) or part not in state:
            return None
        state = state[part]
    return state


REJECTED = "rejected: "
"""Prefix of a memory_update's tool_error when the update was refused (pipeline.agent)."""


def memory_failure_check(events: Sequence[Event]) -> CheckResult | None:
    """The memory update of a turn was refused and never repaired (the trial ended there):
    a State failure, read from the trace like every other check."""
    last: dict[int, Event] = {}
    for event in events:
        if event.kind == "memory_update":
            last[event.turn] = event
    for turn in sorted(last):
        error = last[turn].tool_error or ""
        if error.startswith(REJECTED):
            return CheckResult(f"memory:invalid@{turn}", "state_value", False, turn, 0,
                               error.removeprefix(REJECTED), "state")
    return None


def memory_after(events: Sequence[Event]) -> dict[int, str | None]:
    return {e.turn: e.active_state_after for e in events if e.kind == "user_message"}


def state_checks(turn_no: int, turn: Turn, actual_json: str | None) -> list[CheckResult]:
    if turn.state is None:
        return []
    try:
        actual = json.loads(actual_json) if actual_json else None
    except json.JSONDecodeError:
        actual = None
    results = []
    for path, expected in _leaves(turn.state):
        value = _lookup(actual, path)
        ok = _equal(value, expected)
        detail = (f"{path}={json.dumps(value, ensure_ascii=False)}"
                  + ("" if ok else f", expected {json.dumps(expected, ensure_ascii=False)}"))
        results.append(CheckResult(f"state:{path}@{turn_no}", "state_value", ok,
                                   None if ok else turn_no, None if ok else 0, detail, "state"))
    return results


def copies_request(summary: str) -> bool:
    """The summary repeats its own update request ("Previous summary:", "Dialog so far:",
    "New user message:", or the request's dialog lines): a small model often does, and such a
    text is no summary, whatever phrases the copied request happens to contain."""
    return any(line.lstrip().startswith((*SUMMARY_SCAFFOLD, *DIALOG_LINE_PREFIXES))
               for line in summary.splitlines())


def summary_checks(turn_no: int, turn: Turn, summary: str | None) -> list[CheckResult]:
    text = (summary or "").casefold()
    copied = copies_request(summary or "")
    results = []
    for kind, phrases in (("requires", turn.summary_requires), ("forbids", turn.summary_forbids)):
        for phrase in phrases:
            ways = phrasings(phrase)
            found = next((w for w in ways if w.casefold() in text), None)
            ok = not copied and (found is not None) == (kind == "requires")
            detail = ("the summary copies its update request" if copied else
                      f"summary keeps {found!r}" if kind == "requires" and ok else
                      f"summary lost {' / '.join(map(repr, ways))}" if kind == "requires" else
                      f"summary has no {ways[0]!r}" if ok else f"summary still has {found!r}")
            results.append(CheckResult(f"summary:{kind}:{ways[0]}@{turn_no}", "summary_term", ok,
                                       None if ok else turn_no, None if ok else 0, detail,
                                       "state"))
    return results


# --- Response -----------------------------------------------------------------------------

def clarification_check(turn_no: int, turn: Turn, reply: tuple[int, str] | None
                        ) -> CheckResult | None:
    if turn.clarification == "allowed":
        return None
    step, text = reply if reply is not None else (None, "")
    asks = "?" in text
    ok = asks if turn.clarification == "required" else not asks
    what = "asked" if asks else "did not ask"
    return CheckResult(f"clarification:{turn.clarification}@{turn_no}", "clarification", ok,
                       None if ok else turn_no, None if ok else step,
                       f"reply {what} a question ({turn.clarification})", "response")


def phrase_checks(turn_no: int, turn: Turn, reply: tuple[int, str] | None) -> list[CheckResult]:
    step, text = reply if reply is not None else (None, "")
    results = []
    for phrase in turn.response_forbids:
        ok = phrase.casefold() not in text.casefold()
        results.append(CheckResult(f"response:forbids:{phrase}@{turn_no}", "response_phrase",
                                   ok, None if ok else turn_no, None if ok else step,
                                   f"reply {'does not claim' if ok else 'claims'} {phrase!r}",
                                   "response"))
    return results


MIN_LETTERS = 12
"""Texts with fewer letters than this say too little to tell their language."""


def script_of(text: str) -> str | None:
    """The dominant alphabet of ``text`` ("cyrillic", "latin", "other"), by letter count;
    None when it has too few letters."""
    counts = {"cyrillic": 0, "latin": 0, "other": 0}
    for char in text:
        if char.isalpha():
            counts[_alphabet(char)] += 1
    if sum(counts.values()) < MIN_LETTERS:
        return None
    return max(counts, key=lambda k: counts[k])


LANGUAGE_SHARE = 0.25
"""A reply in the user's language has at least this share of its prose letters (tables, code
and JSON left out) in the user's alphabet: Russian prose around English room names passes, an
English reply quoting one Russian word does not (under 10%)."""


def _alphabet(char: str) -> str:
    return "cyrillic" if "\u0400" <= char <= "\u04ff" else "latin" if char.isascii() else "other"


_MARKUP = re.compile(r"```.*?(?:```|$)|<[^<>]{1,40}>|^\s*\|.*$", re.DOTALL | re.MULTILINE)


def prose_of(text: str) -> str:
    """``text`` without what is not prose: code fences, tags, table rows, JSON objects."""
    text = _MARKUP.sub(" ", text)
    out, depth = [], 0
    for char in text:
        depth += char == "{"
        if depth == 0:
            out.append(char)
        depth = max(0, depth - (char == "}"))
    return "".join(out)


def script_share(text: str, alphabet: str) -> float | None:
    """Share of the prose letters of ``text`` in ``alphabet``: 0 when a reply with letters has
    no prose at all (a JSON blob is no answer in any language); None when it has too few
    letters to tell."""
    if sum(c.isalpha() for c in text) < MIN_LETTERS:
        return None
    letters = [c for c in prose_of(text) if c.isalpha()]
    if len(letters) < MIN_LETTERS:
        return 0.0
    return sum(_alphabet(c) == alphabet for c in letters) / len(letters)


def language_check(turn_no: int, turn: Turn, reply: tuple[int, str] | None
                   ) -> CheckResult | None:
    """The reply is written in the user's alphabet (a Russian user gets no English reply)."""
    wanted = script_of(turn.user)
    if wanted is None or reply is None:
        return None
    step, text = reply
    share = script_share(text, wanted)
    if share is None and not any(c.isalnum() for c in text):
        share = 0.0  # a reply of punctuation only (">") answers in no language
    if share is None:
        return None
    ok = share >= LANGUAGE_SHARE
    return CheckResult(f"reply_language@{turn_no}", "reply_language", ok,
                       None if ok else turn_no, None if ok else step,
                       f"{share:.0%} of the reply's letters are {wanted}, as the user writes "
                       f"(at least {LANGUAGE_SHARE:.0%} wanted)", "response")


def said_vs_done_check(events: Sequence[Event], calls: list[Call], domain: Domain
                       ) -> CheckResult:
    from pipeline.response import final_replies, said_vs_done

    replies = [(r.turn, r.step, r.text) for r in final_replies(events)]
    violations = said_vs_done(replies, calls, domain.claim_patterns)
    if not violations:
        return CheckResult("said_vs_done", "said_vs_done", True, None, None,
                           f"{len(replies)} replies agree with the journal", "response")
    first = violations[0]
    return CheckResult("said_vs_done", "said_vs_done", False, first.turn, first.step,
                       f"{first.kind} {first.tool}: {first.clause!r}", "response")


def _reply_of_turn(events: Sequence[Event]) -> dict[int, tuple[int, str]]:
    replies: dict[int, tuple[int, str]] = {}
    for event in events:
        if event.kind == "assistant_message" and (event.content or "").strip():
            replies[event.turn] = (event.step, event.content or "")
    return replies


# --- all together -------------------------------------------------------------------------

OUTCOME_SCORES: dict[str, ScoreName] = {
    "empty_response": "response", "output_truncated": "response", "context_limit": "response",
    "tool_loop": "function", "step_limit": "function",
}
"""Which score an agent error that ended the dialog fails (``invalid_memory`` is the State
check ``memory:invalid``)."""


def outcome_check(error_kind: str, events: Sequence[Event]) -> CheckResult | None:
    """The agent error that ended the dialog, at the point where it ended."""
    score_name = OUTCOME_SCORES.get(error_kind)
    if score_name is None or not events:
        return None
    last = events[-1]
    return CheckResult(f"outcome:{error_kind}@{last.turn}", "agent_outcome", False, last.turn,
                       last.step, f"the dialog ended at turn {last.turn} step {last.step}: "
                       f"{error_kind}", score_name)


@dataclass(frozen=True)
class Played:
    """How far the dialog got: every turn, or up to ``last_turn`` when an agent error ended it."""

    last_turn: int
    ended_early: bool

    def reached(self, turn: int | None) -> bool:
        """A check about ``turn`` (None: the end of the dialog) applies to what was played."""
        if not self.ended_early:
            return True
        return turn is not None and turn <= self.last_turn

    def judges(self, turn: int | None, check: CheckResult) -> bool:
        """Whether a check that something happens at ``turn`` applies: the turn the error cut
        short counts only when it already happened there (it might have come later)."""
        if not self.ended_early:
            return True
        return turn is not None and (turn < self.last_turn
                                     or (turn == self.last_turn and check.passed))


def score(events: Sequence[Event], scenario: Scenario, memory_mode: str = "chat",
          error_kind: str | None = None, domain: Domain | None = None) -> list[CheckResult]:
    """Every check of ``scenario`` over the trace. ``error_kind``: the agent error that ended
    the dialog, if one did; then checks about turns (or the end) it never reached do not
    apply, and the error itself is a check at the point where the dialog ended. ``domain``:
    the scenario's domain as the trial loaded it (default: looked up by name)."""
    from pipeline.trajectory import trajectory_check

    calls = calls_of(events)
    played = Played(last_turn(events), error_kind is not None)
    turns = max(last_turn(events), len(scenario.turns))
    rules = scenario.expectations
    memory_failure = memory_failure_check(events)
    results = [memory_failure] if memory_failure is not None else []
    outcome = outcome_check(error_kind, events) if error_kind is not None else None
    results += [outcome] if outcome is not None else []
    results += [forbidden_check(r, calls) for r in rules.forbidden_tools]
    results += [c for r in rules.required_tools
                if played.judges(r.turn, c := required_check(r, calls, turns))]
    if rules.trajectory is not None:
        trajectory = trajectory_check(rules.trajectory, calls)
        if trajectory.passed or played.reached(trajectory.turn):
            results.append(trajectory)
    results += [argument_check(r, calls) for r in rules.argument_constraints]
    results += [final_check(r, calls, turns) for r in rules.final_values if played.reached(None)]
    results += [c for r in rules.fresh_calls
                if played.judges(r.turn, c := fresh_call_check(r, calls, events))]
    results += _turn_checks(events, scenario, memory_mode, played)
    results.append(said_vs_done_check(events, calls, domain or load_domain(scenario.domain)))
    return results


def _turn_checks(events: Sequence[Event], scenario: Scenario, memory_mode: str,
                 played: Played) -> list[CheckResult]:
    memory = memory_after(events)
    replies = _reply_of_turn(events)
    results: list[CheckResult] = []
    for number, turn in enumerate(scenario.turns, start=1):
        if not played.reached(number):
            break
        if memory_mode == "structured":
            results += state_checks(number, turn, memory.get(number))
        elif memory_mode == "summary":
            results += summary_checks(number, turn, memory.get(number))
        reply = replies.get(number)
        if reply is None and played.ended_early:
            continue  # the turn ended in the error before any reply: nothing to judge
        clarification = clarification_check(number, turn, reply)
        if clarification is not None:
            results.append(clarification)
        results += phrase_checks(number, turn, reply)
        language = language_check(number, turn, reply)
        if language is not None:
            results.append(language)
    return results
