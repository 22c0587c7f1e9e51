"""One trial as a person reads it: the dialog with memory, tool calls and results, then checks."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pipeline.stored.trials import StoredTrial

WIDTH = 400
"""Longest text shown per event (tool results and memory are cut, marked with …)."""


def _cut(text: str | None, width: int = WIDTH) -> str:
    value = (text or "").strip()
    return value if len(value) <= width else value[:width] + "…"


def _compact(text: str | None) -> str:
    try:
        return json.dumps(json.loads(text or ""), ensure_ascii=False, sort_keys=True)
    except (json.JSONDecodeError, TypeError):
        return text or ""


def header(row: Any) -> str:
    verdict = {True: "PASSED", False: "FAILED", None: "no verdict"}[row.get("passed")]
    error = f" {row.get('error_kind')}: {row.get('error_message')}" if row.get("error_kind") else ""
    first = row.get("first_violation_check")
    return (f"trial {row['trial_id']} (run {row['run_id']}): {row['scenario_id']} "
            f"v{row['scenario_version']} / {row['memory_mode']} / repeat {row['repeat']} / "
            f"{row['model']} seed {row.get('seed')}\n"
            f"{row['status']}{error}; {verdict}"
            + (f"; first violation {first} at turn {row.get('first_violation_turn')} step "
               f"{row.get('first_violation_step')}" if first else ""))


def dialog_lines(trial: StoredTrial) -> Iterator[str]:
    for event in trial.events:
        at = f"[{event.turn}.{event.step}]"
        if event.kind == "user_message":
            who = "USER (simulated)" if event.simulated else "USER"
            yield f"{at} {who}: {event.content}"
        elif event.kind == "memory_update":
            note = f" (rejected: {event.rejected})" if event.rejected is not None else ""
            yield f"{at}   memory r{event.state_revision}{note}: {_cut(_compact(event.content))}"
        elif event.kind == "assistant_message":
            cut = " [cut off at the token limit]" if event.finish_reason == "length" else ""
            if (event.content or "").strip() or cut:
                yield f"{at} AGENT: {event.content}{cut}"
        elif event.kind == "tool_call":
            error = (f"  COMMITTED ({event.effects} row(s) changed), then answered with an "
                     f"error: {event.tool_error}" if event.tool_error and event.effects else
                     f"  REFUSED: {event.tool_error}" if event.tool_error else "")
            kind = " (intercepted)" if event.intercepted else ""
            yield f"{at}   -> {event.tool_name}{kind} {event.arguments}{error}"
        elif event.kind == "nudge":
            yield f"{at}   (an empty reply; the harness asked again: {event.content})"
        elif event.kind == "tool_result" and not event.tool_error:
            yield f"{at}   <- {_cut(event.result, 300)}"


def check_lines(trial: StoredTrial) -> Iterator[str]:
    for check in trial.checks:
        mark = "ok  " if check["passed"] else "FAIL"
        signal = " (a signal: not counted in passed)" if check.get("counted") is False else ""
        yield f"  {mark} {check['check_id']}{signal}: {check['detail']}"


def render(trial: StoredTrial) -> str:
    return "\n".join([header(trial.row), "", *dialog_lines(trial), "", "checks:",
                      *check_lines(trial)])
