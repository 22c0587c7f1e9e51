"""Offline rescoring: traces rebuilt from the warehouse, scored again with today's checks.

Scoring is a pure function of (trace, scenario, memory mode), so a stored trial can be scored
again without calling any model: ``stored_trials`` reads a run's final trials and their events
back into ``Event`` records, ``rescore`` scores one with the scenario as the catalog has it
today. ``rescore_run`` writes the result as a new run (same trial ids and attempts, new check
rows with today's check versions). Infrastructure-incomplete trials have nothing to score.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from pipeline.catalog import Scenario, Suite
from pipeline.catalog.database_models import DiagnosticName
from pipeline.scoring import CheckResult, ConditionOutcome, TrialScores, score_trial
from pipeline.stored.trials import ScenarioIndex, StoredTrial, stored_trials
from pipeline.trial.database_rows import diagnostic_rows, snapshot_rows
from pipeline.trial.rows import condition_row
from pipeline.util.version import code_version
from warehouse.location import Root
from warehouse.rows import CheckRow, RunRow, TrialKey, TrialRow
from warehouse.writer import WarehouseWriter


@dataclass(frozen=True)
class Rescored:
    trial: StoredTrial
    checks: tuple[CheckResult, ...]
    scores: TrialScores
    passed: bool | None
    """None: a check raised (a ``check_error`` row); rescoring again after the fix fills it."""
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


def rescore_run(root: Root, run_id: str, new_run_id: str,
                suites: Sequence[Suite] | None = None) -> RescoreOutcome:
    """Write every scorable final trial of ``run_id`` again under ``new_run_id``: the trial
    row with today's scores, its events unchanged, today's check rows, and a runs row. The
    judge's verdicts go along for the trials scored against the same scenario (the judge read
    the same dialog and the same expectations); a trial whose scenario changed gets none, so
    a stale verdict never stands beside a new check."""
    from pipeline.stored.judgments import stored_judgments

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
