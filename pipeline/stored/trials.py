"""The warehouse read back as traces: stored trials with their scenario, for rescore, the judge,
check calibration and ``agentsweep show``."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline.catalog import Scenario, Suite, known_suites, load_suites
from pipeline.scoring.check_ids import readable_check_id
from pipeline.trace import Event, Trace, event_from_row
from pipeline.trial.database_rows import snapshots_of
from warehouse.location import Root
from warehouse.query import run_named


@dataclass(frozen=True)
class StoredTrial:
    """A final trial row and its events, as the warehouse holds them."""

    row: Mapping[str, Any]
    events: tuple[Event, ...]
    checks: tuple[Mapping[str, Any], ...] = ()
    """The check rows the run recorded for this trial."""
    snapshots: Mapping[str, Any] = field(default_factory=dict)
    """A database domain's database before and after the dialog."""

    def trace(self) -> Trace:
        """The trial's trace as scoring sees it: its events, its database snapshots and the
        agent error (if any) that ended the dialog."""
        ended = self.row["status"] in ("agent_error", "limit")
        return Trace(list(self.events), ended_by=str(self.row["error_kind"]) if ended else None,
                     snapshots=dict(self.snapshots))

    def to_json(self) -> str:
        """One JSON line (``agentsweep checks export``): trial row, events, recorded checks,
        database snapshots."""
        return json.dumps({"trial": dict(self.row), "events": [e.row() for e in self.events],
                           "checks": [dict(c) for c in self.checks],
                           "snapshots": dict(self.snapshots)},
                          ensure_ascii=False, default=str, sort_keys=True)

    @classmethod
    def from_json(cls, line: str) -> StoredTrial:
        data = json.loads(line)
        return cls(readable_ids(data["trial"]), tuple(event_from_row(e) for e in data["events"]),
                   tuple(readable_ids(c) for c in data.get("checks", [])),
                   data.get("snapshots", {}))


CHECK_ID_COLUMNS = ("check_id", "first_violation_check")
"""Columns of trial and check rows that hold a check id."""


def readable_ids(row: Mapping[str, Any]) -> dict[str, Any]:
    """``row`` with its check ids in today's readable form (older rows stored JSON escapes)."""
    return {k: readable_check_id(v) if k in CHECK_ID_COLUMNS and isinstance(v, str) else v
            for k, v in row.items()}


def stored_trials(root: Root, run_id: str, trial_id: str | None = None) -> list[StoredTrial]:
    """The run's final trial rows (or the one ``trial_id``), each with its events in order
    and its recorded checks."""
    params = {"run_id": run_id, "trial_id": trial_id}
    trials = run_named(root, "run_trials", params)
    events = run_named(root, "run_events", params)
    checks = run_named(root, "run_checks", params)
    snapshots = run_named(root, "run_snapshots", params)
    snapshot_rows: dict[str, list[dict[str, Any]]] = {}
    for values in snapshots.rows:
        snap = dict(zip(snapshots.columns, values, strict=True))
        snapshot_rows.setdefault(str(snap["trial_id"]), []).append(snap)
    checks_by_trial: dict[str, list[dict[str, Any]]] = {}
    for values in checks.rows:
        check = dict(zip(checks.columns, values, strict=True))
        checks_by_trial.setdefault(str(check["trial_id"]), []).append(
            readable_ids({k: v for k, v in check.items() if k not in ("schema_version", "run_id")}))
    by_trial: dict[str, list[Event]] = {}
    for values in events.rows:
        event_row = dict(zip(events.columns, values, strict=True))
        by_trial.setdefault(str(event_row["trial_id"]), []).append(event_from_row(event_row))
    out = []
    for values in trials.rows:
        row = readable_ids(dict(zip(trials.columns, values, strict=True)))
        row.pop("schema_version", None)
        trial_id = str(row["trial_id"])
        out.append(StoredTrial(row, tuple(by_trial.get(trial_id, [])),
                               tuple(checks_by_trial.get(trial_id, [])),
                               snapshots_of(snapshot_rows.get(trial_id, []))))
    return out


class ScenarioIndex:
    """Scenarios by (suite id, scenario id) from the given suites (default: every suite of
    the catalog roots, cases suites too, not only the default run's)."""

    def __init__(self, suites: Sequence[Suite] | None = None) -> None:
        loaded = suites if suites is not None else load_suites(list(known_suites().values()))
        self._by_key = {(suite.id, s.scenario.id): (s.scenario, s.sha256)
                        for suite in loaded for s in suite.scenarios}

    def find(self, row: Mapping[str, Any]) -> tuple[Scenario, str] | None:
        return self._by_key.get((str(row["suite_id"]), str(row["scenario_id"])))
