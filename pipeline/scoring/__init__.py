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
from pipeline.scoring.entities import Attribute, EntityKind, ResultItems, Value
from pipeline.scoring.failures import guarded_value, has_check_error
from pipeline.scoring.journal import Call, Journal, Reply
from pipeline.scoring.languages import Language, PhraseClaim
from pipeline.scoring.results import (
    CHECK_VERSIONS,
    KIND_OF_ID_PREFIX,
    SCORES,
    CheckKind,
    CheckResult,
    ScoreName,
)
from pipeline.scoring.summary import UNKNOWN_SCORES, TrialScores, summarize_trial
from pipeline.trace import Trace

__all__ = [
    "ANY_WORDS", "CHECK_VERSIONS", "KIND_OF_ID_PREFIX", "SCORES", "Attribute", "Call",
    "CheckKind", "CheckResult", "ClaimPatterns", "ConditionOutcome", "DenialPatterns",
    "EntityKind", "Journal", "Language", "PhraseClaim", "Reply", "ResultItems", "ScoreName",
    "Value",
    "TrialScores",
    "TrialScoring", "score_trial",
]


@dataclass(frozen=True)
class TrialScoring:
    checks: tuple[CheckResult, ...]
    scores: TrialScores
    passed: bool | None
    """Every counted check held and no agent error ended the dialog (a check with
    ``counted = False`` is recorded in ``checks`` and changes nothing here); None (unknown)
    when a check raised (a ``check_error`` row says which)."""
    condition: ConditionOutcome | None = None
    """A condition task's outcome (the unstated-conditions method): what was done and said."""
    diagnostics: dict[DiagnosticName, bool | None] | None = None
    """A database scenario's diagnostics chosen in advance (the three-errors method), by name."""


def score_trial(trace: Trace, scenario: Scenario, memory_mode: str,
                domain: Domain | None = None) -> TrialScoring:
    """Score ``trace`` against ``scenario``. ``domain``: the scenario's domain as the trial
    loaded it (default: looked up by name in the catalog roots). A check that raises leaves a
    ``check_error`` row and ``passed`` None (unknown): scoring itself never raises for it."""
    domain = domain or load_domain(scenario.domain)
    journal = Journal.of(trace.events)
    checks = run_checks(journal, scenario, memory_mode, trace.ended_by, domain, trace.snapshots)
    counted = [c for c in checks if c.counted]
    summary = guarded_value("summary", lambda: summarize_trial(journal, scenario, domain,
                                                               counted, memory_mode))
    rules = scenario.condition
    outcome = guarded_value("condition", lambda: condition_outcome(
        journal, rules, domain.claim_patterns) if rules is not None else None)
    chosen = guarded_value("diagnostic", lambda: _diagnostics(journal, scenario, domain))
    errors = [e for e in (summary, outcome, chosen) if isinstance(e, CheckResult)]
    checks += errors
    scores = summary if isinstance(summary, TrialScores) else UNKNOWN_SCORES
    passed = (None if has_check_error(checks)
              else trace.ended_by is None and all(c.passed for c in counted))
    return TrialScoring(tuple(checks), scores, passed,
                        None if isinstance(outcome, CheckResult) else outcome,
                        None if isinstance(chosen, CheckResult) else chosen)


def _diagnostics(journal: Journal, scenario: Scenario,
                 domain: Domain) -> dict[DiagnosticName, bool | None] | None:
    """A database scenario's chosen diagnostics, by name."""
    database = scenario.database
    if database is None:
        return None
    measured = diagnostics(journal, domain)
    return {name: measured[name] for name in database.diagnostics}
