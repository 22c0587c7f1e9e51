"""Retry policy for infrastructure errors: exponential backoff with full jitter."""

from __future__ import annotations

import random

from pydantic import BaseModel, ConfigDict, Field


class RetryPolicy(BaseModel):
    """How often an infrastructure failure of a trial is retried. Agent errors never are."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_attempts: int = Field(default=4, ge=1,
                              description="Attempts per trial, the first included.")
    backoff_base_s: float = Field(default=0.5, ge=0)
    backoff_max_s: float = Field(default=30.0, ge=0)
    max_outage_s: float = Field(
        default=900.0, ge=0, allow_inf_nan=False,
        description="How long a provider that is down (pipeline.execution.breaker) is waited "
        "out: its trials paused, one probe at a time; past it, retry budgets apply again and its "
        "trials end incomplete. 0: never wait out an outage.")

    def delay_s(self, attempt: int, rng: random.Random,
                retry_after_s: float | None = None) -> float:
        """Delay before attempt ``attempt + 1`` (attempt is 1-based); honours Retry-After."""
        ceiling = min(self.backoff_max_s, self.backoff_base_s * (2 ** (attempt - 1)))
        delay = rng.uniform(0, ceiling)
        if retry_after_s is not None:
            delay = max(delay, min(retry_after_s, self.backoff_max_s))
        return delay
