"""Attempts of a trial: which outcomes are retried, when, and the ``attempts`` warehouse rows.

Pure bookkeeping, no Ray: the executor asks ``RetryBook.settle`` what to do with each finished
attempt. An infrastructure failure (status ``incomplete``: an InfraError kind, or our harness /
a dead worker) is retried with the sweep's ``RetryPolicy`` until ``max_attempts``; agent errors,
limits and complete trials are final at once. Every attempt becomes a row of ``attempts``; only
the final attempt's rows reach ``trials``/``events``/``checks``.
"""

from __future__ import annotations

import heapq
import itertools
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import get_args

from pipeline.errors import InfraErrorKind
from pipeline.execution.retry import RetryPolicy
from pipeline.trial.run import TrialResult
from pipeline.trial.spec import TrialSpec
from pipeline.util.redact import redact
from warehouse.location import Root
from warehouse.rows import AttemptRow

RETRYABLE_KINDS: frozenset[str] = frozenset(get_args(InfraErrorKind))
"""Error kinds of an ``incomplete`` trial that a retry may cure (all infrastructure kinds)."""


def is_retryable(result: TrialResult) -> bool:
    return result.status == "incomplete" and result.trial.error_kind in RETRYABLE_KINDS


@dataclass(frozen=True)
class Attempt:
    """One finished execution attempt of a trial."""

    result: TrialResult
    number: int
    """1-based within the run (a resumed run continues the count)."""
    final: bool
    """Its rows are the trial's rows in ``trials``; otherwise it is retried."""
    retry_delay_s: float | None = None
    """Backoff before the next attempt, when retried."""

    def row(self) -> AttemptRow:
        trial = self.result.trial
        message = trial.error_message
        return AttemptRow(
            run_id=trial.run_id, trial_id=trial.trial_id, attempt_id=trial.attempt_id,
            attempt=self.number, outcome=trial.status, error_kind=trial.error_kind,
            message=None if message is None else redact(message), node_id=trial.node_id,
            started_at=trial.started_at, finished_at=trial.finished_at,
            retry_delay_s=self.retry_delay_s,
        )


@dataclass(order=True)
class _Due:
    at: float
    seq: int
    spec: TrialSpec = field(compare=False)
    attempt: int = field(compare=False)


@dataclass
class RetryBook:
    """Attempt numbers per trial and the trials waiting out their backoff (a min-heap by due
    time). ``clock`` is injectable for tests."""

    policy: RetryPolicy
    prior: Mapping[str, int] = field(default_factory=dict)
    """trial_id -> attempts already recorded for this run (resume continues the count)."""
    rng: random.Random = field(default_factory=random.Random)
    clock: Callable[[], float] = time.monotonic
    _waiting: list[_Due] = field(default_factory=list)
    _seq: itertools.count[int] = field(default_factory=itertools.count)
    _free: dict[str, int] = field(default_factory=dict)
    """trial_id -> attempts that failed while their provider was known to be down (they do
    not use up the retry budget)."""

    def first_attempt(self, spec: TrialSpec) -> int:
        return self.prior.get(spec.trial_id, 0) + 1

    def settle(self, spec: TrialSpec, number: int, result: TrialResult,
               retry_after_s: float | None = None, free: bool = False) -> Attempt:
        """Decide on a finished attempt; a retried one is queued for its due time. ``free``:
        the attempt failed while its provider was down (pipeline.execution.breaker): retried without
        using up the budget, unless the policy allows one attempt only (no retries at all)."""
        if free and is_retryable(result) and self.policy.max_attempts > 1:
            self._free[spec.trial_id] = self._free.get(spec.trial_id, 0) + 1
        budget_used = (number - self.prior.get(spec.trial_id, 0)  # a resume: a fresh budget
                       - self._free.get(spec.trial_id, 0))
        if is_retryable(result) and budget_used < self.policy.max_attempts:
            delay = self.policy.delay_s(budget_used, self.rng, retry_after_s)
            heapq.heappush(self._waiting, _Due(self.clock() + delay, next(self._seq), spec,
                                               number + 1))
            return Attempt(result, number, final=False, retry_delay_s=delay)
        self.forget(spec.trial_id)
        return Attempt(result, number, final=True)

    def forget(self, trial_id: str) -> None:
        """A trial is final: nothing of it is kept (a night's book holds the trials in flight
        and waiting, not every trial that ever had a free retry)."""
        self._free.pop(trial_id, None)

    @property
    def tracked(self) -> int:
        """Trials whose free retries the book counts."""
        return len(self._free)

    def again(self, spec: TrialSpec, number: int, result: TrialResult) -> Attempt:
        """An attempt that finished but whose rows were lost with its worker: it runs again at
        once, free of the budget (``result`` says why, in its ``attempts`` row)."""
        self._free[spec.trial_id] = self._free.get(spec.trial_id, 0) + 1
        heapq.heappush(self._waiting, _Due(self.clock(), next(self._seq), spec, number + 1))
        return Attempt(result, number, final=False, retry_delay_s=0.0)

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def pop_due(self) -> tuple[TrialSpec, int] | None:
        """The next retry whose backoff is over, if any."""
        if self._waiting and self._waiting[0].at <= self.clock():
            due = heapq.heappop(self._waiting)
            return due.spec, due.attempt
        return None

    def drop(self, forbidden: Callable[[TrialSpec], bool]) -> int:
        """Forget the waiting retries whose spec is ``forbidden``; returns how many."""
        kept = [due for due in self._waiting if not forbidden(due.spec)]
        dropped = len(self._waiting) - len(kept)
        if dropped:
            heapq.heapify(kept)
            self._waiting = kept
        return dropped

    def seconds_to_next(self) -> float | None:
        """Time until the earliest queued retry is due (0 if overdue); None if none waits."""
        if not self._waiting:
            return None
        return max(0.0, self._waiting[0].at - self.clock())


def attempt_counts(root: Root, run_id: str, open_only: bool = False) -> dict[str, int]:
    """trial_id -> attempts already recorded for the run (a resume continues the numbering).
    ``open_only``: only trials without a final outcome (a resume skips the others: a night's
    final trials need not be held in memory)."""
    from warehouse.query import run_named  # duckdb: only the driver needs it

    name = "attempt_counts_open" if open_only else "attempt_counts"
    result = run_named(root, name, {"run_id": run_id})
    return {row[0]: int(row[1]) for row in result.rows}
