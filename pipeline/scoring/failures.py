"""Scorer failures apart from verdicts: a check that raises is recorded, not re-run.

A bug in one of our checks says nothing about the agent and is no reason to pay for the dialog
again. ``guarded`` runs one check (or one group of checks) and, when it raises, returns a
``check_error`` row instead: the exception's type and its message (secrets redacted), never
counted, so the trial's verdict is unknown (``TrialScoring.passed`` is None) until ``rescore``
scores the stored trace again with a fixed check (pydantic_evals' ``EvaluatorFailure``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from pipeline.scoring.results import CheckResult
from pipeline.util.redact import redact

CHECK_ERROR_PREFIX = "check_error"
T = TypeVar("T")

MESSAGE_CHARS = 500
"""The longest exception message a ``check_error`` row keeps."""


def check_error(stage: str, exc: Exception) -> CheckResult:
    """The row that records ``exc``, raised while scoring ``stage`` (a check's name)."""
    message = redact(str(exc))[:MESSAGE_CHARS]
    return CheckResult(f"{CHECK_ERROR_PREFIX}:{stage}", "check_error", False, None, None,
                       f"{type(exc).__name__}: {message}", None, counted=False)


def guarded(stage: str, produce: Callable[[], Iterable[CheckResult]]) -> list[CheckResult]:
    """``produce()``'s checks, or one ``check_error`` row when it raises."""
    try:
        return list(produce())
    except Exception as exc:  # a scorer bug: recorded apart, never the agent's, never retried
        return [check_error(stage, exc)]


def guarded_value(stage: str, compute: Callable[[], T]) -> T | CheckResult:
    """``compute()``, or the ``check_error`` row of ``stage`` when it raises."""
    try:
        return compute()
    except Exception as exc:  # a scorer bug: recorded apart, never the agent's, never retried
        return check_error(stage, exc)


def has_check_error(checks: Sequence[CheckResult]) -> bool:
    """Whether some check could not be computed (the trial's verdict is then unknown)."""
    return any(c.check_kind == "check_error" for c in checks)
