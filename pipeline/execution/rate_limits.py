"""Limits in the provider's units per provider group: requests and tokens per minute, and a
pause after a 429 or 529, held for the whole cluster.

Each group with an ``rpm`` or ``tpm`` gets one ``RateLimiter``: a named async Ray actor beside
the group's concurrency limiter (pipeline.execution.concurrency). Before each model call the
worker's ``CallGate`` asks it for one request and an estimate of the call's tokens
(pipeline.models.token_estimate) and waits until both are granted; after the call it reports
the tokens the provider counted (``correct``; a reply without usage keeps the estimate). A
429's ``Retry-After`` (or a 529) pauses the group: no call of that group starts anywhere until
then (``pause``).

The accounting is a pair of token buckets (``Buckets``), pure and on an injected clock: each
refills at ``limit / 60`` per second up to one second's worth, starts empty, and may go into
debt (a call is granted once the level is back at zero, whatever its size). Over any span of T
seconds at most ``limit * T / 60`` plus one second's worth and one call go through, so the
achieved rate stays at the limit; corrections move the level both ways.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline.models.config import ModelConfig

LIMITER_NAMESPACE = "agentsweep"
"""The Ray namespace of every limiter actor (these and pipeline.execution.concurrency's)."""

@dataclass(frozen=True)
class RateLimits:
    """A provider group's limits in the provider's units; None: no such limit."""

    rpm: int | None = None
    """Requests (model calls) per minute."""
    tpm: int | None = None
    """Tokens (prompt and completion) per minute."""

    def __bool__(self) -> bool:
        return self.rpm is not None or self.tpm is not None


def rates_from(models: Sequence[ModelConfig]) -> dict[str, RateLimits]:
    """Provider group -> its rpm and tpm from the models (the spec checks that a group has one
    value of each; should two differ, the smaller wins)."""
    rates: dict[str, RateLimits] = {}
    for model in models:
        if model.rpm is None and model.tpm is None:
            continue
        old = rates.get(model.provider, RateLimits())
        rates[model.provider] = RateLimits(_smaller(old.rpm, model.rpm),
                                           _smaller(old.tpm, model.tpm))
    return rates


def _smaller(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


@dataclass
class Bucket:
    """One token bucket: ``per_minute`` units a minute, one second's worth of burst."""

    per_minute: float
    level: float = 0.0
    """Units that may be taken now (negative: a debt the refill pays back first)."""
    updated: float = 0.0

    @property
    def rate(self) -> float:
        return self.per_minute / 60.0

    @property
    def capacity(self) -> float:
        return max(1.0, self.rate)

    def refill(self, now: float) -> None:
        if now > self.updated:
            self.level = min(self.capacity, self.level + (now - self.updated) * self.rate)
            self.updated = now

    def wait_s(self) -> float:
        """Until the level is back at zero (0: a call may take from it now)."""
        return 0.0 if self.level >= 0 else -self.level / self.rate


@dataclass
class Buckets:
    """A group's request and token buckets and its pause; pure, ``clock`` injectable."""

    limits: RateLimits
    clock: Callable[[], float] = time.monotonic
    paused_until: float = 0.0
    requests: Bucket | None = field(init=False, default=None)
    tokens: Bucket | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        now = self.clock()
        if self.limits.rpm is not None:
            self.requests = Bucket(self.limits.rpm)
            self.requests.updated = now
        if self.limits.tpm is not None:
            self.tokens = Bucket(self.limits.tpm)
            self.tokens.updated = now

    def wait_s(self) -> float:
        """Seconds until a call may start (0: now)."""
        now = self.clock()
        waits = [self.paused_until - now]
        for bucket in self._buckets():
            bucket.refill(now)
            waits.append(bucket.wait_s())
        return max(0.0, *waits)

    def take(self, tokens: int) -> None:
        """Count one call of about ``tokens`` tokens (after ``wait_s`` said 0)."""
        now = self.clock()
        if self.requests is not None:
            self.requests.refill(now)
            self.requests.level -= 1
        self.correct(tokens)

    def correct(self, tokens: int) -> None:
        """``tokens`` more (or, negative, fewer) than counted so far."""
        if self.tokens is not None:
            self.tokens.refill(self.clock())
            self.tokens.level = min(self.tokens.capacity, self.tokens.level - tokens)

    def pause(self, seconds: float) -> None:
        """No call starts for ``seconds`` (a longer pause already set stays)."""
        self.paused_until = max(self.paused_until, self.clock() + max(0.0, seconds))

    def _buckets(self) -> list[Bucket]:
        return [b for b in (self.requests, self.tokens) if b is not None]


class RateLimiter:
    """A group's ``Buckets`` as a Ray actor: calls are granted in the order they asked, each
    when the buckets allow it (all methods on one event loop)."""

    def __init__(self, name: str, rpm: int | None, tpm: int | None) -> None:
        self.name = name
        self._buckets = Buckets(RateLimits(rpm, tpm))
        self._turn = asyncio.Lock()  # FIFO: the first to ask is the first served
        self._changed = asyncio.Event()  # a correction or a pause: the wait is computed again
        self._granted = 0
        self._tokens = 0
        self._pauses = 0

    async def acquire(self, tokens: int) -> None:
        async with self._turn:
            while (wait_s := self._buckets.wait_s()) > 0:
                self._changed.clear()
                try:
                    await asyncio.wait_for(self._changed.wait(), wait_s)
                except TimeoutError:
                    pass
            self._buckets.take(tokens)
            self._granted += 1
            self._tokens += tokens

    async def correct(self, tokens: int) -> None:
        self._buckets.correct(tokens)
        self._tokens += tokens
        self._changed.set()

    async def pause(self, seconds: float) -> None:
        self._buckets.pause(seconds)
        self._pauses += 1
        self._changed.set()

    async def stats(self) -> dict[str, float]:
        return {"granted": self._granted, "tokens": self._tokens, "pauses": self._pauses}


@dataclass(frozen=True)
class RateRef:
    """A rate limiter as workers see it: its name and handle."""

    name: str
    handle: Any


def create_rate_limiters(ray: Any, run_id: str,
                         rates: Mapping[str, RateLimits]) -> dict[str, RateRef]:
    """One rate limiter actor per provider group with an rpm or tpm; owned by the driver,
    killed when ``execute`` ends; it reserves no CPU."""
    remote = ray.remote(RateLimiter)
    refs = {}
    for group, limits in sorted(rates.items()):
        if not limits:
            continue
        name = f"rate:{run_id}:{group}:{uuid.uuid4().hex[:8]}"
        handle = remote.options(name=name, namespace=LIMITER_NAMESPACE, num_cpus=0,
                                max_concurrency=10_000).remote(
            f"{run_id}:{group}", limits.rpm, limits.tpm)
        refs[group] = RateRef(name, handle)
    return refs
