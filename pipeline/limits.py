"""Concurrency limits per provider group that hold across every worker of a Ray cluster.

Each limited group gets one ``ConcurrencyLimiter``: a named async Ray actor acting as a
semaphore over model calls. On a worker, a ``CallGate`` (installed around one trial attempt
with ``pipeline.llm.model_call_guard``) acquires a permit before each model call and releases it
after, so at most ``limit`` calls to that group are open at once, whichever node makes them.
Permits are held per *holder* (one attempt): when a worker dies holding permits, the driver
calls ``release_holder`` and they return to the pool. With no limit configured no actor exists
and the gate does nothing but watch for Retry-After.

The gate also injects a reference model's ``FaultProfile`` (latency and failures) in process,
raising the InfraError a real provider's failure would classify to.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from pipeline.errors import InfraError
from pipeline.grid import ModelConfig, TrialSpec
from pipeline.models.faults import FaultProfile

LIMITER_NAMESPACE = "agentsweep"


def group_of(model: str) -> str:
    """The provider group of a model: its LiteLLM prefix."""
    return ModelConfig(model).provider


def limit_key(model: str, limits: Mapping[str, int]) -> str | None:
    """Which limit governs ``model``: its own name, else its provider group, else none."""
    if model in limits:
        return model
    group = group_of(model)
    return group if group in limits else None


def settings_of(config: Any) -> list[Any]:
    """``config.model_settings`` if the config has it (a list of ModelSettings), else []."""
    settings = getattr(config, "model_settings", None) or []
    return list(settings.values()) if isinstance(settings, Mapping) else list(settings)


def limits_from(config: Any) -> dict[str, int]:
    """Provider group -> concurrency from ``model_settings`` (the spec checks that a group has
    one value; should two differ, the smaller wins)."""
    limits: dict[str, int] = {}
    for item in settings_of(config):
        name, concurrency = _get(item, "name"), _get(item, "concurrency")
        if name and concurrency:
            group = group_of(str(name))
            limits[group] = min(int(concurrency), limits.get(group, int(concurrency)))
    return limits


def faults_from(config: Any) -> dict[str, FaultProfile]:
    """Model name -> injected fault profile from ``model_settings``."""
    faults: dict[str, FaultProfile] = {}
    for item in settings_of(config):
        profile = _get(item, "faults")
        if profile is not None:
            faults[str(_get(item, "name"))] = FaultProfile.model_validate(profile)
    return faults


def call_params_from(config: Any) -> dict[str, dict[str, Any]]:
    """Model name -> per-call LiteLLM options from ``model_settings`` (``api_base``)."""
    params: dict[str, dict[str, Any]] = {}
    for item in settings_of(config):
        api_base = _get(item, "api_base")
        if api_base:
            params[str(_get(item, "name"))] = {"api_base": api_base}
    return params


def with_call_params(specs: Iterable[TrialSpec],
                     params: Mapping[str, Mapping[str, Any]]) -> Iterator[TrialSpec]:
    """Per-model call options into ``TrialSpec.extra``, lazily (``extra`` is not identity)."""
    for spec in specs:
        extra = params.get(spec.model.name)
        yield replace(spec, extra={**spec.extra, **extra}) if extra else spec


def _get(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, Mapping) else getattr(item, key, None)


class ConcurrencyLimiter:
    """An async semaphore with holders. Runs as a Ray actor (all methods on one event loop)."""

    def __init__(self, name: str, limit: int) -> None:
        self.name = name
        self.limit = limit
        self._held: dict[str, int] = {}
        self._in_use = 0
        self._waiters: deque[tuple[str, asyncio.Future[None]]] = deque()
        self._max_in_use = 0
        self._granted = 0

    async def acquire(self, holder: str) -> None:
        if self._in_use < self.limit and not self._waiters:
            self._grant(holder)
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((holder, waiter))
        await waiter  # _wake grants the permit before it resolves the future

    async def release(self, holder: str) -> None:
        count = self._held.get(holder, 0)
        if count:  # unknown holder: its permits were already reclaimed by release_holder
            self._set_held(holder, count - 1)
            self._in_use -= 1
            self._wake()

    async def release_holder(self, holder: str) -> int:
        """Reclaim every permit of a holder whose worker died; drop its waiting requests."""
        count = self._held.pop(holder, 0)
        self._in_use -= count
        for name, waiter in list(self._waiters):
            if name == holder:
                self._waiters.remove((name, waiter))
                waiter.cancel()
        self._wake()
        return count

    async def stats(self) -> dict[str, int]:
        return {"limit": self.limit, "in_use": self._in_use, "waiting": len(self._waiters),
                "max_in_use": self._max_in_use, "granted": self._granted}

    def _grant(self, holder: str) -> None:
        self._set_held(holder, self._held.get(holder, 0) + 1)
        self._in_use += 1
        self._granted += 1
        self._max_in_use = max(self._max_in_use, self._in_use)

    def _set_held(self, holder: str, count: int) -> None:
        if count:
            self._held[holder] = count
        else:
            self._held.pop(holder, None)

    def _wake(self) -> None:
        while self._waiters and self._in_use < self.limit:
            holder, waiter = self._waiters.popleft()
            if not waiter.done():
                self._grant(holder)
                waiter.set_result(None)


def create_limiters(ray: Any, run_id: str, limits: Mapping[str, int]) -> dict[str, Any]:
    """One limiter actor per key (model or provider group), named for `ray list actors`.

    Owned by the driver, killed when ``execute`` ends; it reserves no CPU.
    """
    remote = ray.remote(ConcurrencyLimiter)
    handles = {}
    for key, limit in sorted(limits.items()):
        handles[key] = remote.options(
            name=f"limit:{run_id}:{key}:{uuid.uuid4().hex[:8]}", namespace=LIMITER_NAMESPACE,
            num_cpus=0, max_concurrency=10_000,
        ).remote(f"{run_id}:{key}", int(limit))
    return handles


@dataclass
class CallGate:
    """Worker side, one per attempt: permits, injected faults, and the last Retry-After seen.

    Called as ``gate(model)`` by ``pipeline.llm`` around each model call.
    """

    holder: str
    limiters: Mapping[str, Any] = field(default_factory=dict)
    """limit key -> ConcurrencyLimiter handle (see ``limit_key``)."""
    faults: Mapping[str, FaultProfile] = field(default_factory=dict)
    retry_after_s: float | None = None
    rng: random.Random = field(default_factory=random.Random)

    @contextmanager
    def __call__(self, model: str) -> Iterator[None]:
        key = limit_key(model, self.limiters) if self.limiters else None
        limiter = self.limiters[key] if key is not None else None
        if limiter is not None:
            import ray

            ray.get(limiter.acquire.remote(self.holder))
        try:
            profile = self.faults.get(model)
            if profile is not None:
                _inject(profile, self.rng)
            yield
        except InfraError as exc:
            self.retry_after_s = exc.retry_after_s
            raise
        finally:
            if limiter is not None:
                limiter.release.remote(self.holder)  # fire and forget


def _inject(profile: FaultProfile, rng: random.Random) -> None:
    """Apply one fault decision the way the reference HTTP server would (without the wire)."""
    decision = profile.decide(rng)
    time.sleep(decision.delay_s)
    if decision.kind == "rate_limit":
        raise InfraError("rate_limit", "injected rate limit", profile.retry_after_s)
    if decision.kind == "server_error":
        raise InfraError("server_error", "injected server error")
    if decision.kind == "timeout":
        raise InfraError("timeout", "injected timeout")
    if decision.kind == "connection_drop":
        raise InfraError("connection", "injected connection drop")
