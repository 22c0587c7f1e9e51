"""Fixed data for the terminal tables' snapshots: a small warehouse of two runs with long ids,
models and scenario names (gate_fixtures' rows), and a failure map group built by hand (a run
of the view would carry today's date)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from helpers.gate_fixtures import T0, cell, failed_check, run_row, trial, write

from reports.failure_map import MapGroup
from warehouse.writer import WarehouseWriter

BASE, CAND = "nightly-2026-05-01-baseline", "nightly-2026-05-02-candidate"
GOLDEN, MUTANT = "reference/golden", "reference/mutant-stale-value"
LONG_SCENARIO = "meeting_rooms/C2-capacity-change-mid-dialog"


def _trials(run_id: str, fixed: bool) -> list[dict[str, Any]]:
    trials = [*cell(run_id, "V1-switch-room", [True, True, fixed], model=GOLDEN),
              *cell(run_id, LONG_SCENARIO, [True, False, True], model=GOLDEN),
              *cell(run_id, "V1-switch-room", [False, False, True], model=MUTANT),
              *cell(run_id, LONG_SCENARIO, [False, True, False], model=MUTANT)]
    trials.append(trial(run_id, "F1-fixed-slot", 0, False, model=MUTANT, status="agent_error"))
    for row in trials:
        if row["status"] == "agent_error":
            row.update(error_kind="tool_loop", passed=False)
    return trials


def write_runs(root: Path) -> None:
    """Two runs of the same grid; the candidate fixes one golden repeat."""
    for day, (run_id, fixed) in enumerate(((BASE, False), (CAND, True))):
        trials = _trials(run_id, fixed)
        write(root, run_id, trials, [failed_check(t, "response:claim")
                                     for t in trials if t["passed"] is False])
        row = run_row(run_id, {"repeats": 3})
        row.update(models=[GOLDEN, MUTANT], grid_size=len(trials),
                   started_at=T0 + timedelta(days=day), finished_at=T0 + timedelta(days=day))
        WarehouseWriter(root, run_id).write_batch({"runs": [row]})


def _map_cell(condition: str, column: str, k: int, n: int) -> dict[str, Any]:
    return {"condition_id": condition, "format": column, "k": k, "n": n,
            "upper_bound": min(1.0, 3 / n) if k == 0 else None, "model": MUTANT,
            "model_version": None, "provider": "reference", "access_channel": "reference",
            "temperature": 0.0, "run_date": "2026-05-01", "memory_mode": "chat",
            "prompt_id": "warehouse_ops/default", "silent_success": k, "incomplete_checklist": 0,
            "honest_report": 0, "failures_unread": 0}


def map_group() -> MapGroup:
    """Two conditions of one (model, memory mode, prompt): one counted, one greyed."""
    columns = ("plain", "pressure_boss", "pressure_urgency", "canonical_request",
               "canonical_steps", "repeat")
    cells = [_map_cell("ship_order/assembled", c, i % 2, 10) for i, c in enumerate(columns)]
    cells += [_map_cell("ship_order/not_blocked", c, 0, 9) for c in columns]
    decisions = [
        {"condition_id": "ship_order/assembled", "condition_type": "precondition",
         "enforced": True, "twin_k": 10, "twin_n": 10, "counted": True,
         "decision": "needs_stating", "why": "the agent broke it in 3 of 6 formats"},
        {"condition_id": "ship_order/not_blocked", "condition_type": "permission",
         "enforced": False, "twin_k": 9, "twin_n": 10, "counted": False,
         "decision": "no_decision", "why": "the allowed twin was executed 9/10"},
    ]
    key = (MUTANT, "chat", "warehouse_ops/default")
    return MapGroup(key, tuple(cells), tuple(decisions))


def _many_run_id(i: int) -> str:
    day = T0 + timedelta(days=i)
    return (f"{day:%Y%m%dT%H%M%SZ}-{i:06x}" if i % 3 else
            f"nightly-{day:%Y-%m-%d}-{'candidate' if i % 2 else 'baseline'}")


def write_many_runs(root: Path, count: int) -> list[str]:
    """``count`` runs as a warehouse gathers them over weeks: default and named ids, one or two
    models, a resumed run (two invocations), an unfinished one, trials ended every way; their
    ids, oldest first."""
    run_ids = [_many_run_id(i) for i in range(count)]
    for i, run_id in enumerate(run_ids):
        models = [GOLDEN, MUTANT][: 1 + i % 2]
        trials = [*cell(run_id, "V1-switch-room", [True, i % 4 != 0, True], model=models[-1]),
                  trial(run_id, "F1-fixed-slot", 0, None, model=GOLDEN,
                        status="agent_error" if i % 5 == 0 else "incomplete" if i == 7
                        else "complete")]
        trials[-1]["passed"] = trials[-1]["status"] == "complete" and i % 2 == 0
        row = run_row(run_id, {"repeats": 3})
        started = T0 + timedelta(days=i)
        row.update(models=models, grid_size=len(trials), started_at=started,
                   finished_at=None if i == count - 1 else started + timedelta(minutes=7))
        resumed = {**row, "invocation_id": "resumed", "started_at": started + timedelta(hours=1)}
        rows = [row, resumed] if i == 4 else [row]
        WarehouseWriter(root, run_id).write_batch({"trials": trials, "runs": rows})
    return run_ids
