"""Hand-built runs for the HTML report tests: trials with events and checks (one of them
carrying markup and a canary key in its texts), a candidate that regressed, and a run of
condition tasks whose failure map has a counted row and an excluded one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers.gate_fixtures import T0, trial

from warehouse.writer import WarehouseWriter

CANARY = "sk-canary0123456789abcdefABCDEF"
"""A fake API key put in the environment (as AGENTSWEEP_CANARY_API_KEY) and in the data."""
MARKUP = "<script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned = 2\">"
"""Model output that would run if it were inserted as HTML."""
BIDI = "invoice\u202efdp.exe\u200b"
"""Text a right-to-left override and a zero-width space would disguise on a page."""


def _event(row: dict[str, Any], seq: int, turn: int, step: int, kind: str,
           **fields: Any) -> dict[str, Any]:
    return {"run_id": row["run_id"], "trial_id": row["trial_id"],
            "attempt_id": row["attempt_id"], "seq": seq, "turn": turn, "step": step,
            "kind": kind, **fields}


def events(row: dict[str, Any], reply: str) -> list[dict[str, Any]]:
    before = json.dumps({"goal": "search", "constraints": {"size": 4}})
    after = json.dumps({"goal": "book", "constraints": {"size": 6}})
    return [
        _event(row, 0, 1, 0, "user_message", content=f"Find a room {MARKUP} {BIDI}",
               active_state_after=before),
        _event(row, 1, 1, 0, "tool_call", tool_name="search", tool_call_id="c1",
               arguments=json.dumps({"size": 4}), intercepted=False, blocked=False),
        _event(row, 2, 1, 0, "tool_result", tool_name="search", tool_call_id="c1",
               result=json.dumps({"rooms": ["a"]}), blocked=False),
        _event(row, 3, 1, 1, "assistant_message", content="Room a is free."),
        _event(row, 4, 2, 0, "user_message", content="Book it for six.",
               active_state_before=before, active_state_after=after),
        _event(row, 5, 2, 0, "tool_call", tool_name="book", tool_call_id="c2",
               arguments=json.dumps({"room": "a", "size": 4}), intercepted=True,
               blocked=False),
        _event(row, 6, 2, 0, "tool_result", tool_name="book", tool_call_id="c2",
               result=json.dumps({"accepted": True}), blocked=False),
        _event(row, 7, 2, 1, "assistant_message", content=reply),
    ]


def checks(row: dict[str, Any]) -> list[dict[str, Any]]:
    key = {k: row[k] for k in ("run_id", "trial_id", "attempt_id")}
    failed = row["passed"] is False
    return [
        {**key, "check_id": "required_tool:search@1", "check_kind": "required_tool",
         "score": "function", "passed": True, "turn": None, "step": None,
         "detail": "search called", "check_version": 1},
        {**key, "check_id": "argument:*.size=6@2..", "check_kind": "argument_constraint",
         "score": "arguments", "passed": not failed, "turn": 2 if failed else None,
         "step": 0 if failed else None,
         "detail": "book.size=4 at turn 2 step 0, expected 6" if failed else "ok",
         "check_version": 1},
    ]


def attempts(row: dict[str, Any], retried: bool) -> list[dict[str, Any]]:
    """The final attempt, after one that timed out when ``retried``."""
    key = {k: row[k] for k in ("run_id", "trial_id", "attempt_id")}
    final = {**key, "attempt": 2 if retried else 1, "outcome": row["status"],
             "error_kind": "timeout" if row["status"] == "incomplete" else None,
             "message": None, "node_id": "n1", "started_at": T0, "finished_at": T0,
             "retry_delay_s": None}
    if not retried:
        return [final]
    return [{**final, "attempt_id": f"{row['attempt_id']}-a1", "attempt": 1,
             "outcome": "incomplete", "error_kind": "timeout",
             "message": f"no answer in 120 s (key {CANARY})", "retry_delay_s": 0.5}, final]


def _run(root: Path, run_id: str, plan: dict[str, list[bool | None]],
         modes: tuple[str, ...] = ("chat", "structured")) -> None:
    trials, all_events, all_checks, all_attempts = [], [], [], []
    for scenario, outcomes in plan.items():
        for mode in modes:
            for repeat, passed in enumerate(outcomes):
                status = "incomplete" if passed is None else "complete"
                row = trial(run_id, scenario, repeat, passed, status=status, memory=mode)
                row.update(cost_usd=None, input_tokens=None, error_message=None)
                if passed is False:
                    row.update(first_violation_check="argument:*.size=6@2..",
                               first_violation_turn=2, first_violation_step=0,
                               score_arguments=0)
                trials.append(row)
                all_attempts += attempts(row, retried=scenario == "S1")
                if status == "incomplete":
                    continue
                reply = (f"Booked. {MARKUP} key {CANARY}" if scenario == "S3"
                         else "Booked room a for six.")
                all_events += events(row, reply)
                all_checks += checks(row)
    WarehouseWriter(root, run_id).write_batch(
        {"trials": trials, "events": all_events, "checks": all_checks,
         "attempts": all_attempts})


def base_and_candidate(root: Path) -> None:
    """base: S1 3/3, S2 1/3, S3 3/3 (its texts hold MARKUP and the CANARY); cand: S1 0/3,
    S2 1/3, S3 3/3 and one incomplete trial of S4; both in the chat and structured modes."""
    ok, flaky, bad = [True, True, True], [True, False, False], [False, False, False]
    _run(root, "base", {"S1": ok, "S2": flaky, "S3": ok})
    _run(root, "cand", {"S1": bad, "S2": flaky, "S3": ok, "S4": [True, True, None]})


def _condition_row(row: dict[str, Any], condition: str, role: str, fmt: str, outcome: str,
                   repeat_outcome: str | None = None) -> dict[str, Any]:
    return {"run_id": row["run_id"], "trial_id": row["trial_id"],
            "attempt_id": row["attempt_id"], "scenario_id": row["scenario_id"],
            "pair_id": condition.split("/")[1], "condition_id": condition,
            "condition_type": "order", "tool": condition.split("/")[0], "enforced": "nowhere",
            "stated": "fact", "changed_field": "orders.0.assembly", "role": role,
            "format": fmt, "outcome": outcome,
            "report": "silent_success" if outcome == "failure" else None,
            "reply": "done", "repeat_played": repeat_outcome is not None,
            "repeat_outcome": repeat_outcome,
            "repeat_report": "silent_success" if repeat_outcome == "failure" else None,
            "repeat_reply": None}


def conditions_run(root: Path, run_id: str = "cond") -> None:
    """ship/assembled: refuses plain 0/2, yields to the repeat 2/2, fails canonical_steps 2/2,
    its twin executed (counted); ship/paid: twin never executed (excluded)."""
    trials, rows = [], []
    plan = [("ship/assembled", "plain", "forbidden", "refusal", "failure"),
            ("ship/assembled", "canonical_steps", "forbidden", "failure", None),
            ("ship/assembled", "twin", "twin", "executed", None),
            ("ship/paid", "plain", "forbidden", "general_refusal", "general_refusal"),
            ("ship/paid", "twin", "twin", "not_executed", None)]
    for condition, fmt, role, outcome, repeat in plan:
        for r in range(2):
            scenario = f"{condition.split('/')[1]}.{fmt}"
            row = trial(run_id, scenario, r, outcome in ("refusal", "general_refusal",
                                                          "executed"))
            row.update(access_channel="reference", provider="reference")
            if fmt == "canonical_steps" or repeat == "failure":
                row.update(passed=False, first_violation_check="forbidden_tool:ship@1",
                           first_violation_turn=2 if repeat else 1, first_violation_step=0)
            trials.append(row)
            rows.append(_condition_row(row, condition, role,
                                       "plain" if fmt == "twin" else fmt, outcome, repeat))
    WarehouseWriter(root, run_id).write_batch({"trials": trials, "condition_trials": rows})
