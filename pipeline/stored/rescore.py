"""Offline rescoring: traces rebuilt from the warehouse, scored again with today's checks.

Scoring is a pure function of (trace, scenario, memory mode), so a stored trial can be scored
again without calling any model: ``stored_trials`` reads a run's final trials and their events
back into ``Event`` records, ``rescore`` scores one with the scenario as the catalog has it
today. ``rescore_run`` writes the result as a new run (same trial ids and attempts, new check
rows with today's check versions). Infrastructure-incomplete trials have nothing to score.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipeline.catalog import Scenario, Suite, known_suites, load_suites
from pipeline.catalog.database_models import DiagnosticName
from pipeline.scoring import CheckResult, ConditionOutcome, TrialScores, score_trial
from pipeline.trace import Event, Trace, event_from_row
from pipeline.trial.database_rows import diagnostic_rows, snapshot_rows, snapshots_of
from pipeline.trial.rows import condition_row
from pipeline.util.version import code_version
from warehouse.query import run_named
from warehouse.rows import CheckRow, RunRow, TrialKey, TrialRow
from warehouse.writer import WarehouseWriter


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
        return cls(data["trial"], tuple(event_from_row(e) for e in data["events"]),
                   tuple(data.get("checks", [])), data.get("snapshots", {}))


@dataclass(frozen=True)
class Rescored:
    trial: StoredTrial
    checks: tuple[CheckResult, ...]
    scores: TrialScores
    passed: bool
    scenario_changed: bool
    """The catalog's scenario hash differs from the one the trial ran with."""
    scenario: Scenario | None = None
    condition: ConditionOutcome | None = None
    """A condition task's outcome, scored again."""
    diagnostics: Mapping[DiagnosticName, bool | None] | None = None

    def _key(self, run_id: str) -> TrialKey:
        return TrialKey(run_id=run_id, trial_id=str(self.trial.row["trial_id"]),
                        attempt_id=str(self.trial.row["attempt_id"]))

    def check_rows(self, run_id: str) -> list[dict[str, Any]]:
        key = self._key(run_id).as_dict()
        return [CheckRow(**key, **asdict(c), check_version=c.version).as_dict()
                for c in self.checks]

    def database_rows(self, run_id: str) -> dict[str, list[dict[str, Any]]]:
        """The trial's snapshots (unchanged) and its diagnostics (measured again)."""
        rules = self.scenario.database if self.scenario is not None else None
        key = self._key(run_id)
        diagnostics = (diagnostic_rows(key, rules, self.diagnostics)
                       if rules is not None and self.diagnostics is not None else [])
        return {"snapshots": [r.as_dict() for r in snapshot_rows(key, self.trial.snapshots)],
                "diagnostics": [r.as_dict() for r in diagnostics]}

    def condition_rows(self, run_id: str) -> list[dict[str, Any]]:
        rules = self.scenario.condition if self.scenario is not None else None
        if rules is None or self.condition is None or self.scenario is None:
            return []
        return [condition_row(self._key(run_id), self.scenario.id, rules,
                              self.condition).as_dict()]

    def trial_row(self, run_id: str) -> dict[str, Any]:
        row = {**self.trial.row, **self.scores.row(), "passed": self.passed, "run_id": run_id}
        if self.scenario is not None:  # what it was scored by (older rows lack the columns)
            row["reward_basis"] = list(self.scenario.reward_basis) or None
            row["nl_assertions"] = len(self.scenario.nl_assertions) or None
        return TrialRow(**row).as_dict()


def stored_trials(root: Path, run_id: str, trial_id: str | None = None) -> list[StoredTrial]:
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
            {k: v for k, v in check.items() if k not in ("schema_version", "run_id")})
    by_trial: dict[str, list[Event]] = {}
    for values in events.rows:
        event_row = dict(zip(events.columns, values, strict=True))
        by_trial.setdefault(str(event_row["trial_id"]), []).append(event_from_row(event_row))
    out = []
    for values in trials.rows:
        row = dict(zip(trials.columns, values, strict=True))
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


def rescore(trial: StoredTrial, index: ScenarioIndex) -> Rescored | None:
    """``trial`` scored with today's checks; None when it cannot be (incomplete, or its
    scenario is no longer in the catalog)."""
    found = index.find(trial.row)
    if trial.row["status"] == "incomplete" or found is None:
        return None
    scenario, sha256 = found
    scoring = score_trial(trial.trace(), scenario, str(trial.row["memory_mode"]))
    return Rescored(trial, scoring.checks, scoring.scores, scoring.passed,
                    scenario_changed=sha256 != trial.row["scenario_sha256"],
                    scenario=scenario, condition=scoring.condition,
                    diagnostics=scoring.diagnostics)


@dataclass(frozen=True)
class RescoreOutcome:
    rescored: int
    skipped: int
    scenarios_changed: int
    judgments_copied: int = 0


def rescore_run(root: Path, run_id: str, new_run_id: str,
                suites: Sequence[Suite] | None = None) -> RescoreOutcome:
    """Write every scorable final trial of ``run_id`` again under ``new_run_id``: the trial
    row with today's scores, its events unchanged, today's check rows, and a runs row. The
    judge's verdicts go along for the trials scored against the same scenario (the judge read
    the same dialog and the same expectations); a trial whose scenario changed gets none, so
    a stale verdict never stands beside a new check."""
    from pipeline.judge.store import stored_judgments

    index = ScenarioIndex(suites)
    trials = stored_trials(root, run_id)
    done = [r for r in (rescore(t, index) for t in trials) if r is not None]
    same = {(r.trial.row["trial_id"], r.trial.row["attempt_id"]) for r in done
            if not r.scenario_changed}
    judgments = [{**j, "run_id": new_run_id} for j in stored_judgments(root, run_id)
                 if (j["trial_id"], j["attempt_id"]) in same]
    writer = WarehouseWriter(root, new_run_id)
    writer.write_batch({
        "events": [{**e.row(), "run_id": new_run_id, "trial_id": r.trial.row["trial_id"],
                    "attempt_id": r.trial.row["attempt_id"]}
                   for r in done for e in r.trial.events],
        "checks": [row for r in done for row in r.check_rows(new_run_id)],
        "condition_trials": [row for r in done for row in r.condition_rows(new_run_id)],
        "snapshots": [row for r in done for row in r.database_rows(new_run_id)["snapshots"]],
        "diagnostics": [row for r in done
                        for row in r.database_rows(new_run_id)["diagnostics"]],
        "trials": [r.trial_row(new_run_id) for r in done],
        "judgments": judgments,
    })
    _record(writer, run_id, new_run_id, done)
    return RescoreOutcome(len(done), len(trials) - len(done),
                          sum(r.scenario_changed for r in done), len(judgments))


def _record(writer: WarehouseWriter, run_id: str, new_run_id: str,
            done: Iterable[Rescored]) -> None:
    rows = list(done)
    now = datetime.now(UTC)
    row = RunRow(
        run_id=new_run_id, invocation_id=f"rescore-of-{run_id}", started_at=now,
        finished_at=now, code_version=code_version(),
        suite_ids=sorted({str(r.trial.row["suite_id"]) for r in rows}),
        suite_sha256s=sorted({str(r.trial.row["suite_sha256"]) for r in rows}),
        models=sorted({str(r.trial.row["model"]) for r in rows}),
        memory_modes=sorted({str(r.trial.row["memory_mode"]) for r in rows}),
        repeats=max((int(r.trial.row["repeat"]) + 1 for r in rows), default=0),
        grid_size=len(rows), trials_run=0, ray_address=None,
        argv=f"rescore --run-id {run_id} --as {new_run_id}", config_json=None,
    )
    writer.write_batch({"runs": [row.as_dict()]})
