"""What the driver learns of a finished attempt when the worker keeps its rows.

A worker that writes its own parts (pipeline.execution.parts) sends the driver only this: what
settling the attempt needs (the circuit breaker, group pauses, the spend cap, a config error
that stops the sweep) and what counting it needs (its status, whether it passed). The rows stay
with the worker until a part holds them.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.execution.spend import Charge, charges_of
from pipeline.trial.run import TrialResult
from warehouse.schema import TrialStatus


@dataclass(frozen=True)
class Outcome:
    """A finished attempt without its rows."""

    trial_id: str
    number: int
    """The attempt's number within the run."""
    status: TrialStatus
    error_kind: str | None
    passed: bool | None
    model_calls: int
    """Calls its agent's model answered."""
    user_model_calls: int
    """Calls its user simulator's model answered."""
    user_provider_failure: str | None
    charges: tuple[Charge, ...]

    @classmethod
    def of(cls, result: TrialResult, number: int) -> Outcome:
        trial = result.trial
        return cls(trial.trial_id, number, trial.status, trial.error_kind, trial.passed,
                   trial.model_calls, trial.user_model_calls or 0,
                   result.user_provider_failure, tuple(charges_of(trial)))
