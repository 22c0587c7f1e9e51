"""The committed real traces (catalogs/*/labels/*.traces.jsonl), scored again with today's
checks, by the first eight characters of a trial id."""

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
    trials = {}
    for path in sorted((REPO / "catalogs").glob("*/labels/*.traces.jsonl")):
        trials.update({str(t.row["trial_id"])[:8]: t for t in read_traces(path)})
    return trials


def rescored(trial_prefix: str) -> Rescored:
    done = rescore(committed_trials()[trial_prefix], ScenarioIndex())
    assert done is not None
    return done


def check(trial_prefix: str, check_id: str) -> CheckResult:
    return next(c for c in rescored(trial_prefix).checks if c.check_id == check_id)
