"""Test helpers over the one scoring entry (``pipeline.scoring.score_trial``)."""

from __future__ import annotations

from dataclasses import replace

from pipeline.catalog import Scenario
from pipeline.scoring import CheckResult, TrialScores, score_trial
from pipeline.trace import Trace


def checks_of(trace: Trace, scenario: Scenario, mode: str = "chat",
              ended_by: str | None = None) -> tuple[CheckResult, ...]:
    """The check results of ``trace``; ``ended_by``: the agent error that ended it."""
    return score_trial(replace(trace, ended_by=ended_by), scenario, mode).checks


def scores_of(trace: Trace, scenario: Scenario, mode: str = "chat") -> TrialScores:
    return score_trial(trace, scenario, mode).scores
