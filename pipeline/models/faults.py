"""Fault profiles for the reference HTTP server: latency and injected provider failures.

A ``FaultProfile`` is a plain value (frozen, ``extra='forbid'``). ``decide(rng)`` turns it into
one ``FaultDecision`` per request; given a seeded ``random.Random`` the sequence of decisions is
reproducible. Each call draws exactly two numbers (latency jitter, then the fault), whatever the
profile, so changing one rate does not shift the draws of later requests.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

FaultKind = Literal["none", "rate_limit", "server_error", "timeout", "connection_drop",
                    "overloaded", "context_length"]


class FaultProfile(BaseModel):
    """Latency and failure rates for served chat completions. Rates are in [0, 1], sum <= 1."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    latency_ms: float = Field(default=0.0, ge=0)
    """Fixed delay before every answer (also before an injected error)."""
    latency_jitter_ms: float = Field(default=0.0, ge=0)
    """Uniform +/- jitter added to ``latency_ms`` (the delay never goes below 0)."""
    rate_limit: float = Field(default=0.0, ge=0, le=1)
    """Share of requests answered HTTP 429 with a ``Retry-After`` header."""
    retry_after_s: float = Field(default=0.05, ge=0)
    """Value of the ``Retry-After`` header on a 429, in seconds."""
    server_error: float = Field(default=0.0, ge=0, le=1)
    """Share of requests answered HTTP 500."""
    timeout: float = Field(default=0.0, ge=0, le=1)
    """Share of requests the server sits on for ``timeout_sleep_s`` before answering."""
    timeout_sleep_s: float = Field(default=30.0, ge=0)
    """How long a 'timeout' request hangs; choose more than the client's timeout."""
    connection_drop: float = Field(default=0.0, ge=0, le=1)
    """Share of requests whose socket is closed without any answer."""
    overloaded: float = Field(default=0.0, ge=0, le=1)
    """Share of requests answered "overloaded" (Anthropic's wire: HTTP 529
    ``overloaded_error``; the others: HTTP 503)."""
    context_length: float = Field(default=0.0, ge=0, le=1)
    """Share of requests answered HTTP 400: the prompt is over the model's context (the
    agent's ``context_limit``, not an infrastructure error)."""

    @model_validator(mode="after")
    def _rates_sum_to_at_most_one(self) -> FaultProfile:
        total = sum(rate for _, rate in self._rates())
        if total > 1.0 + 1e-9:
            terms = " + ".join(f"{kind} {rate:g}" for kind, rate in self._rates() if rate)
            raise ValueError(f"fault rates sum to {total:g} ({terms}); the sum must be <= 1")
        return self

    def decide(self, rng: random.Random) -> FaultDecision:
        """One request's fate: its delay and which fault (if any) to inject."""
        jitter = rng.uniform(-self.latency_jitter_ms, self.latency_jitter_ms)
        delay_s = max(0.0, self.latency_ms + jitter) / 1000
        draw = rng.random()
        threshold = 0.0
        for kind, rate in self._rates():
            threshold += rate
            if draw < threshold:
                return FaultDecision(kind, delay_s)
        return FaultDecision("none", delay_s)

    def _rates(self) -> tuple[tuple[FaultKind, float], ...]:
        return (("rate_limit", self.rate_limit), ("server_error", self.server_error),
                ("timeout", self.timeout), ("connection_drop", self.connection_drop),
                ("overloaded", self.overloaded), ("context_length", self.context_length))


@dataclass(frozen=True)
class FaultDecision:
    kind: FaultKind
    delay_s: float
    """Latency to add before answering (seconds)."""


NO_FAULTS = FaultProfile()
