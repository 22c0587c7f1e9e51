"""The committed real-model trials (catalogs/*/labels/*.traces.jsonl), rescored with today's
checks, by the first characters of their trial id."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from pipeline.scoring import CheckResult
from pipeline.stored.calibrate import read_traces
from pipeline.stored.rescore import Rescored, rescore
from pipeline.stored.trials import ScenarioIndex, StoredTrial

REPO = Path(__file__).resolve().parents[2]


@cache
def committed_trials() -> dict[str, StoredTrial]:
    """Every committed real trial by its full trial id."""
    trials = {}
    for path in sorted((REPO / "catalogs").glob("*/labels/*.traces.jsonl")):
        trials.update({str(t.row["trial_id"]): t for t in read_traces(path)})
    return trials


def rescored(trial_prefix: str) -> Rescored:
    """The one committed real trial whose id starts with ``trial_prefix``, scored with today's
    checks."""
    (trial,) = [t for i, t in committed_trials().items() if i.startswith(trial_prefix)]
    done = rescore(trial, ScenarioIndex())
    assert done is not None
    return done


def check(trial: Rescored | str, check_id: str) -> CheckResult:
    """The check ``check_id`` of a rescored trial (or of the trial with that id prefix)."""
    done = rescored(trial) if isinstance(trial, str) else trial
    return next(c for c in done.checks if c.check_id == check_id)
