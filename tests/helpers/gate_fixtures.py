"""Hand-built warehouse rows for the compare / gate tests: runs whose cells pass k of n."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from warehouse.schema import TABLES
from warehouse.writer import WarehouseWriter

T0 = datetime(2026, 5, 1, 2, 0, tzinfo=UTC)
OLD, NEW = "a" * 64, "b" * 64


def trial(run_id: str, scenario: str, repeat: int, passed: bool | None, *,
          model: str = "m/a", sha: str = OLD, status: str = "complete",
          score_state: int | None = None, cost: float | None = 0.01,
          latency: float = 1000.0, memory: str = "chat",
          access: str | None = None) -> dict[str, Any]:
    fill = {pa.types.is_string: "x", pa.types.is_integer: 0, pa.types.is_floating: 0.0,
            pa.types.is_boolean: False, pa.types.is_timestamp: T0, pa.types.is_list: []}
    row = {c.name: next(v for test, v in fill.items() if test(c.type))
           for c in TABLES["trials"].columns if not c.nullable}
    row.update(run_id=run_id, trial_id=f"{scenario}-{model}-{memory}-{repeat}",
               attempt_id=f"{run_id}-{scenario}-{model}-{memory}-{repeat}",
               scenario_id=scenario, scenario_sha256=sha, scenario_version=1,
               suite_id="gate_suite", model=model, prompt_id="default", memory_mode=memory,
               repeat=repeat, status=status, passed=passed if status != "incomplete" else None,
               score_state=score_state, cost_usd=cost, input_tokens=100, output_tokens=20,
               latency_ms=latency, tool_calls=2, code_version="agentsweep 0.test",
               access_channel=access)
    if passed is False and status == "complete":
        row.update(score_response=0, first_violation_check="response:claim@1",
                   first_violation_turn=1, first_violation_step=0)
    return row


def cell(run_id: str, scenario: str, passes: Iterable[bool], **kw: Any) -> list[dict[str, Any]]:
    return [trial(run_id, scenario, r, p, **kw) for r, p in enumerate(passes)]


def failed_check(row: dict[str, Any], check_id: str) -> dict[str, Any]:
    return {"run_id": row["run_id"], "trial_id": row["trial_id"],
            "attempt_id": row["attempt_id"], "check_id": check_id, "check_kind": "response",
            "score": "response", "passed": False, "turn": 1, "step": 0, "detail": "seen",
            "check_version": 1}


def write(root: Path, run_id: str, trials: list[dict[str, Any]],
          checks: list[dict[str, Any]] | None = None) -> None:
    WarehouseWriter(root, run_id).write_batch({"trials": trials, "checks": checks or []})


ALL, NONE, ONE, TWO = [True] * 3, [False] * 3, [True, False, False], [True, True, False]


def base_run(root: Path, run_id: str = "base") -> None:
    write(root, run_id, [*cell(run_id, "CRIT", ALL), *cell(run_id, "STAB", ALL),
                         *cell(run_id, "FIX", NONE), *cell(run_id, "FLAKY", ONE),
                         *cell(run_id, "EDIT", ALL), *cell(run_id, "SAME", ALL)])


def cand_run(root: Path, run_id: str = "cand", *, crit_fixed: bool = False) -> None:
    """CRIT fails everywhere with a state violation (unless ``crit_fixed``), STAB 3/3 -> 1/3,
    FIX 0/3 -> 3/3, FLAKY 1/3 -> 2/3, EDIT's expectations edited (new hash)."""
    crit = (cell(run_id, "CRIT", ALL) if crit_fixed
            else cell(run_id, "CRIT", NONE, score_state=0))
    trials = [*crit, *cell(run_id, "STAB", ONE), *cell(run_id, "FIX", ALL),
              *cell(run_id, "FLAKY", TWO), *cell(run_id, "EDIT", ALL, sha=NEW),
              *cell(run_id, "SAME", ALL)]
    checks = [failed_check(t, "decision_mismatch") for t in trials if t["passed"] is False]
    write(root, run_id, trials, checks)


def run_row(run_id: str, config: dict[str, Any]) -> dict[str, Any]:
    """A ``runs`` row whose recorded config (config_json) is ``config``."""
    import json

    fill = {pa.types.is_string: "x", pa.types.is_integer: 0, pa.types.is_floating: 0.0,
            pa.types.is_boolean: False, pa.types.is_timestamp: T0, pa.types.is_list: []}
    row = {c.name: next(v for test, v in fill.items() if test(c.type))
           for c in TABLES["runs"].columns if not c.nullable}
    row.update(run_id=run_id, config_json=json.dumps(config), finished_at=T0)
    return row
