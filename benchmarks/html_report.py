"""Size and load time of the HTML report at scale: `.venv/bin/python benchmarks/html_report.py`

For each size (default 1,000 / 10,000 / 100,000 trials) it writes a synthetic run through the
real ``WarehouseWriter`` (trials with eight events and five checks each, batches of 5,000
trials; 2 models x 3 memory modes x 10 repeats per scenario, so 100k trials are 1,667 scenarios
and 10,002 matrix cells; a scenario passes with its own probability, so about a third fail),
then renders ``agentsweep report html`` of it (default trace caps) and opens the file in
headless Chromium (tests/helpers/browser.py): the file's size, the render time, and the load time
(navigation to the report's script being ready, the median of three loads) and the time from
a click on a cell to a shown trace. Prints one line per size and a JSON summary.

Options: ``--sizes 1000,10000``, ``--keep DIR`` (keep the warehouses there).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from helpers.browser import Browser  # noqa: E402

from pipeline.util.redact import redactor  # noqa: E402
from reports.html import ReportOptions, write_report  # noqa: E402
from warehouse.writer import WarehouseWriter  # noqa: E402

MODELS = ("openai/model-a", "anthropic/model-b")
MODES = ("chat", "summary", "structured")
REPEATS = 10
BATCH = 5000
T0 = datetime(2026, 6, 1, 2, 0, tzinfo=UTC)
STATE = json.dumps({"goal": "reserve_room", "constraints": {"attendees": 6, "starts_at":
                    "2026-08-07T15:00:00+03:00", "required_features": ["экран", "видеосвязь"]},
                    "permissions": {"reserve_room": True, "search_rooms": True}})


def _trial(run_id: str, scenario: int, model: str, mode: str, repeat: int, passed: bool
           ) -> dict[str, Any]:
    trial_id = f"{scenario:05d}{MODELS.index(model)}{MODES.index(mode)}{repeat:02d}".ljust(32, "0")
    started = T0 + timedelta(seconds=scenario)
    failed = not passed
    return {
        "run_id": run_id, "trial_id": trial_id, "attempt_id": trial_id[::-1],
        "scenario_id": f"S{scenario:05d}", "scenario_version": 1, "scenario_sha256": "a" * 64,
        "scenario_class": "revision", "suite_id": "synthetic", "suite_sha256": "b" * 64,
        "domain": "meeting_rooms", "model": model, "provider": model.split("/")[0],
        "access_channel": "direct_api", "model_version": model + "-2026-05-01",
        "system_fingerprint": "fp_1", "temperature": 0.7, "generation_params": "{}",
        "seed": repeat, "prompt_id": "meeting_rooms/default", "prompt_sha256": "c" * 64,
        "tools_sha256": "d" * 64, "memory_mode": mode, "repeat": repeat, "status": "complete",
        "passed": passed, "score_state": None if mode == "chat" else int(passed),
        "score_function": 1, "score_arguments": int(passed), "score_response": 1,
        "vetoed": False, "first_violation_turn": 2 if failed else None,
        "first_violation_step": 0 if failed else None,
        "first_violation_check": f"argument:*.starts_at@{1 + scenario % 3}.." if failed else None,
        "turns": 3, "model_calls": 6, "tool_calls": 3, "input_tokens": 4200 + scenario % 100,
        "output_tokens": 310, "cost_usd": 0.0021, "latency_ms": 2500.0 + (scenario * 7) % 900,
        "started_at": started, "finished_at": started + timedelta(seconds=3),
        "code_version": "0.1.0+bench",
    }


def _events(row: dict[str, Any]) -> list[dict[str, Any]]:
    key = {k: row[k] for k in ("run_id", "trial_id", "attempt_id")}
    texts = [("user_message", 1, 0, {"content": "Подбери переговорную на 7 августа в 15:00.",
                                     "active_state_after": STATE}),
             ("tool_call", 1, 0, {"tool_name": "search_rooms", "tool_call_id": "c1",
                                  "arguments": '{"capacity": 6}', "intercepted": False,
                                  "blocked": False}),
             ("tool_result", 1, 0, {"tool_name": "search_rooms", "tool_call_id": "c1",
                                    "result": '{"rooms": [{"id": "amber"}, {"id": "birch"}]}',
                                    "blocked": False}),
             ("assistant_message", 1, 1, {"content": "Свободны amber и birch."}),
             ("user_message", 2, 0, {"content": "Нужна видеосвязь, бронируй самую дешёвую.",
                                     "active_state_before": STATE, "active_state_after": STATE}),
             ("tool_call", 2, 0, {"tool_name": "reserve_room", "tool_call_id": "c2",
                                  "arguments": '{"room_id": "amber"}', "intercepted": True,
                                  "blocked": False}),
             ("tool_result", 2, 0, {"tool_name": "reserve_room", "tool_call_id": "c2",
                                    "result": '{"accepted": true}', "blocked": False}),
             ("assistant_message", 2, 1, {"content": "Забронировал birch на час."})]
    return [{**key, "seq": i, "turn": t, "step": s, "kind": k, **f}
            for i, (k, t, s, f) in enumerate(texts)]


def _checks(row: dict[str, Any]) -> list[dict[str, Any]]:
    key = {k: row[k] for k in ("run_id", "trial_id", "attempt_id")}
    out = []
    for i in range(5):
        failed = i == 0 and not row["passed"]
        out.append({**key, "check_id": row["first_violation_check"] if failed else
                    f"state:constraints.f{i}@1", "check_kind": "argument_constraint",
                    "score": "arguments", "passed": not failed, "turn": 2 if failed else None,
                    "step": 0 if failed else None, "detail": "seen", "check_version": 1})
    return out


def _attempt(row: dict[str, Any]) -> dict[str, Any]:
    return {"run_id": row["run_id"], "trial_id": row["trial_id"],
            "attempt_id": row["attempt_id"], "attempt": 1, "outcome": "complete",
            "error_kind": None, "message": None, "node_id": "n1",
            "started_at": row["started_at"], "finished_at": row["finished_at"],
            "retry_delay_s": None}


def synthetic_run(root: Path, run_id: str, trials: int) -> float:
    """Write ``trials`` trials; seconds taken."""
    started = time.monotonic()
    rng = random.Random(trials)
    writer = WarehouseWriter(root, run_id)
    scenarios = -(-trials // (len(MODELS) * len(MODES) * REPEATS))
    rates = [rng.choice((1.0, 1.0, 0.9, 0.6, 0.3, 0.0)) for _ in range(scenarios)]
    batch: dict[str, list[dict[str, Any]]] = {"trials": [], "events": [], "checks": [],
                                              "attempts": []}
    made = 0
    for scenario in range(scenarios):
        for model in MODELS:
            for mode in MODES:
                for repeat in range(REPEATS):
                    if made == trials:
                        break
                    row = _trial(run_id, scenario, model, mode, repeat,
                                 rng.random() < rates[scenario])
                    batch["trials"].append(row)
                    batch["events"] += _events(row)
                    batch["checks"] += _checks(row)
                    batch["attempts"].append(_attempt(row))
                    made += 1
                    if len(batch["trials"]) == BATCH:
                        writer.write_batch(batch)
                        batch = {name: [] for name in batch}
    if batch["trials"]:
        writer.write_batch(batch)
    return time.monotonic() - started


def measure(root: Path, out: Path, trials: int) -> dict[str, Any]:
    run_id = f"bench-{trials}"
    written = synthetic_run(root, run_id, trials)
    started = time.monotonic()
    write_report(root, out, run_id, ReportOptions(scrub=redactor()))
    rendered = time.monotonic() - started
    loads = []
    with Browser(timeout_s=120) as browser:
        for _ in range(3):
            loads.append(browser.open(out))
        started = time.monotonic()
        browser.click("#matrix td.cell[data-k='0']")
        browser.click("#viewer button.trial")
        shown = browser.evaluate("!!document.getElementById('first-violation')")
        clicked = time.monotonic() - started
        errors = list(browser.errors)
    return {"trials": trials, "size_mb": round(out.stat().st_size / 1e6, 2),
            "write_warehouse_s": round(written, 1), "render_s": round(rendered, 2),
            "load_s": round(statistics.median(loads), 2), "loads_s": [round(x, 2) for x in loads],
            "click_to_trace_s": round(clicked, 2), "trace_shown": shown,
            "console_errors": errors}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--keep", type=Path, default=None)
    args = parser.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="agentsweep-bench-html-"))
    results = []
    try:
        for size in (int(s) for s in args.sizes.split(",")):
            result = measure(base / "warehouse", base / f"report-{size}.html", size)
            results.append(result)
            print(f"{size:>7} trials: {result['size_mb']:6.2f} MB, render "
                  f"{result['render_s']:5.2f} s, load {result['load_s']:5.2f} s (headless "
                  f"Chromium, median of 3), click to trace {result['click_to_trace_s']:.2f} s; "
                  f"warehouse written in {result['write_warehouse_s']} s; console errors: "
                  f"{len(result['console_errors'])}", flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
