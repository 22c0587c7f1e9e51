"""What the viewer's JSON endpoints answer, read from the warehouse by the named queries
``warehouse/sql/view_*.sql`` (and the trends and trace queries the reports already have).

Every value is plain JSON (times as ISO text, no NaN); the app scrubs and serves it, the page's
script writes it with ``textContent`` only.
"""

from __future__ import annotations

import math
import threading
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Literal, get_args

from reports.html.traces import traces_of
from reports.trends import load_trends
from reports.view.progress import LockHeld, progress, run_state
from warehouse.location import Root
from warehouse.query import files_of, run_named

Outcome = Literal["passed", "failed", "unknown", "agent_error", "limit", "incomplete"]
"""What a search can ask a trial's outcome to be (``unknown``: a check raised)."""
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)
SEARCH_LIMIT = 200
TREND_CELLS = 300


def plain(value: Any) -> Any:
    """A query's value as JSON: times as ISO text, NaN and infinities as null."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def _records(root: Root, name: str, params: dict[str, Any] | None = None
             ) -> list[dict[str, Any]]:
    result = run_named(root, name, params, all_runs=True)
    return [dict(zip(result.columns, row, strict=True)) for row in result.rows]


_runs_rows: dict[Root, tuple[tuple[object, ...], list[dict[str, Any]]]] = {}
_runs_lock = threading.Lock()


def _index_rows(root: Root) -> list[dict[str, Any]]:
    """``view_runs.sql``'s rows, asked again only when the warehouse's files changed (their
    identities: warehouse.query.files_of): a page polling every 2 s costs a look at the files,
    not a pass over every trial."""
    key = files_of(root)
    with _runs_lock:
        found = _runs_rows.get(root)
    if found is not None and found[0] == key:
        return found[1]
    rows = _records(root, "view_runs")
    with _runs_lock:
        if len(_runs_rows) > 4:
            _runs_rows.clear()
        _runs_rows[root] = (key, rows)
    return rows


def runs_index(root: Root, now: datetime, lock_held: LockHeld | None) -> list[dict[str, Any]]:
    """Every run, newest first, with its state and (running) its progress."""
    out = []
    for row in _index_rows(root):
        state = run_state(bool(row["open"]), str(row["run_id"]), lock_held)
        judged = row["passed"] + row["failed"] + row["agent_errors"]
        record = {k: plain(v) for k, v in row.items()
                  if k not in ("open", "latest_started_at", "done_since_latest")}
        record.update(state=state, pass_rate=row["passed"] / judged if judged else None,
                      progress=asdict(progress(row, now)) if state == "running" else None)
        out.append(record)
    return out


def trends(root: Root, since: datetime) -> dict[str, Any]:
    """The window's regressions (what changed), flaky cells and the cells' run series."""
    found = load_trends(root, since)
    regressions = [{**asdict(r.cell), "title": r.cell.title, "runs": r.runs,
                    "last_passing_run": r.last_passing_run,
                    "first_failing_run": r.first_failing_run,
                    "failing": f"{r.failing_passed}/{r.failing_judged}",
                    "what_changed": r.what_changed,
                    "changes": [asdict(c) for c in r.changes]} for r in found.regressions]
    flaky = [{**asdict(f.cell), "title": f.cell.title, "runs": f.runs, "passed": f.passed,
              "judged": f.judged, "pass_rate": f.pass_rate} for f in found.flaky]
    cells = _records(root, "view_trend_cells", {"since": since, "limit": TREND_CELLS})
    answer: dict[str, Any] = plain({"since": since, "regressions": regressions, "flaky": flaky,
                                    "cells": cells})
    return answer


CELL_KEY = ("suite_id", "scenario_id", "model", "prompt_id", "memory_mode")


def cell_series(root: Root, cell: dict[str, str], since: datetime) -> list[dict[str, Any]]:
    """One cell's runs since ``since``, oldest first, with their recorded inputs."""
    rows: list[dict[str, Any]] = plain(_records(root, "cell_series", {**cell, "since": since}))
    return rows


@dataclass(frozen=True)
class SearchQuery:
    run_id: str | None = None
    scenario: str | None = None
    model: str | None = None
    outcome: Outcome | None = None
    failed_check: str | None = None
    first_violation: str | None = None
    text: str | None = None
    limit: int = SEARCH_LIMIT


def search(root: Root, query: SearchQuery) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = plain(_records(root, "view_search", asdict(query)))
    return rows


def facets(root: Root) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {"scenario": [], "model": [], "first_violation": [],
                                 "failed_check": []}
    for row in _records(root, "view_facets"):
        out[str(row["facet"])].append(str(row["value"]))
    return out


def trace(root: Root, run_id: str, trial_id: str) -> dict[str, Any] | None:
    """One trial's trace (the HTML report's: row, events, checks, judgments, attempts)."""
    found: dict[str, Any] | None = traces_of(root, run_id, [trial_id]).get(trial_id)
    return found
