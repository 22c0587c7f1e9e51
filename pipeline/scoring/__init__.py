"""Scoring: a pure function of (trace, scenario, memory mode), versioned, re-runnable offline.

``score_trial`` is the one entry: it reads the trace's journal once (``Journal``), runs every
check the scenario declares (``run_checks``) and sums them into the five scores of the
changing-intent method,
the veto, the first violation and the diagnostics (``TrialScores``). Nothing here does I/O or
calls a model; the same trace and scenario always give the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.catalog import Domain, Scenario, load_domain
from pipeline.catalog.database_models import DiagnosticName
from pipeline.scoring.checks import run_checks
from pipeline.scoring.claims import ANY_WORDS, ClaimPatterns, DenialPatterns
from pipeline.scoring.conditions import ConditionOutcome, condition_outcome
from pipeline.scoring.database import diagnostics
from pipeline.scoring.journal import Call, Journal, Reply
from pipeline.scoring.results import (
    CHECK_VERSIONS,
    KIND_OF_ID_PREFIX,
    SCORES,
    CheckKind,
    CheckResult,
    ScoreName,
)
from pipeline.scoring.summary import TrialScores, summarize_trial
from pipeline.trace import Trace

__all__ = [
    "ANY_WORDS", "CHECK_VERSIONS", "KIND_OF_ID_PREFIX", "SCORES", "Call", "CheckKind",
    "CheckResult", "ClaimPatterns", "ConditionOutcome", "DenialPatterns", "Journal", "Reply",
    "ScoreName",
    "TrialScores",
    "TrialScoring", "score_trial",
]


@dataclass(frozen=True)
class TrialScoring:
    checks: tuple[CheckResult, ...]
    scores: TrialScores
    passed: bool
    """Every counted check held and no agent error ended the dialog (a check with
    ``counted = False`` is recorded in ``checks`` and changes nothing here)."""
    condition: ConditionOutcome | None = None
    """A condition task's outcome (the unstated-conditions method): what was done and said."""
    diagnostics: dict[DiagnosticName, bool | None] | None = None
    """A database scenario's diagnostics chosen in advance (the three-errors method), by name."""


def score_trial(trace: Trace, scenario: Scenario, memory_mode: str,
                domain: Domain | None = None) -> TrialScoring:
    """Score ``trace`` against ``scenario``. ``domain``: the scenario's domain as the trial
    loaded it (default: looked up by name in the catalog roots)."""
    domain = domain or load_domain(scenario.domain)
    journal = Journal.of(trace.events)
    checks = run_checks(journal, scenario, memory_mode, trace.ended_by, domain, trace.snapshots)
    counted = [c for c in checks if c.counted]
    scores = summarize_trial(journal, scenario, domain, counted, memory_mode)
    passed = trace.ended_by is None and all(c.passed for c in counted)
    rules = scenario.condition
    outcome = (condition_outcome(journal, rules, domain.claim_patterns)
               if rules is not None else None)
    database = scenario.database
    measured = diagnostics(journal, domain) if database is not None else None
    chosen = ({name: measured[name] for name in database.diagnostics}
              if database is not None and measured is not None else None)
    return TrialScoring(tuple(checks), scores, passed, outcome, chosen)
