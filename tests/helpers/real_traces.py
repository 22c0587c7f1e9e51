"""The committed real-model trials (catalogs/*/labels/*.traces.jsonl), rescored with today's
checks, by the first characters of their trial id."""

from __future__ import annotations

from pathlib import Path

from pipeline.scoring.results import CheckResult
from pipeline.stored.calibrate import read_traces
from pipeline.stored.rescore import Rescored, rescore
from pipeline.stored.trials import ScenarioIndex

REPO = Path(__file__).resolve().parents[2]
LABELS = {"meeting_rooms": "local-1", "guest_pass": "local-1", "orders": "local-judge-1"}


def rescored(trial_prefix: str) -> Rescored:
    """A committed real trial, scored with today's checks."""
    for domain, name in LABELS.items():
        for trial in read_traces(REPO / "catalogs" / domain / "labels" / f"{name}.traces.jsonl"):
            if str(trial.row["trial_id"]).startswith(trial_prefix):
                done = rescore(trial, ScenarioIndex())
                assert done is not None
                return done
    raise AssertionError(f"no committed trial {trial_prefix}")


def check(done: Rescored, check_id: str) -> CheckResult:
    """The check ``check_id`` of a rescored trial."""
    return next(c for c in done.checks if c.check_id == check_id)
