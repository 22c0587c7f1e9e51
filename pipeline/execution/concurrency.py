"""Concurrency limits per provider group that hold across every worker of a Ray cluster.

Each limited group gets one ``ConcurrencyLimiter``: a named async Ray actor acting as a
semaphore over model calls. On a worker, a ``CallGate`` (installed around one trial attempt
with ``pipeline.models.client.model_call_guard``) takes a permit before each model call and gives
it back after, so at most ``limit`` calls to that group are open at once, whichever node makes them.
Permits are leased by worker process (``PermitPool``) and passed between its threads without a
round trip to the actor; a process gives a permit back when none of its threads wants it. When
a worker process dies, the driver calls ``release_holder`` and its leases return to the actor.
With no limit configured no actor exists and the gate only watches for Retry-After.

The gate also injects a reference model's ``FaultProfile`` (latency and failures) in process,
raising the InfraError a real provider's failure would classify to.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pipeline.errors import AgentError, InfraError
from pipeline.execution.group_pause import GROUP_PAUSES, BoardRef, follow, pause_of
from pipeline.execution.rate_limits import LIMITER_NAMESPACE, RateRef
from pipeline.models.config import ModelConfig
from pipeline.models.faults import FaultProfile
from pipeline.models.providers import provider_of
from pipeline.runtime.as_coroutine import in_coroutine, pause, wait_for, wait_on_ray


def group_of(model: str) -> str:
    """The provider group of a model: its LiteLLM prefix
    (``pipeline.models.providers.provider_of``)."""
    return provider_of(model)


def limit_key(model: str, limits: Mapping[str, Any]) -> str | None:
    """Which limit governs ``model``: its own name, else its provider group, else none."""
    if model in limits:
        return model
    group = group_of(model)
    return group if group in limits else None


def limits_from(models: Sequence[ModelConfig]) -> dict[str, int]:
    """Provider group -> concurrency from the models (the spec checks that a group has one
    value; should two differ, the smaller wins)."""
    limits: dict[str, int] = {}
    for model in models:
        if model.concurrency:
            group = model.provider
            limits[group] = min(model.concurrency, limits.get(group, model.concurrency))
    return limits


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


@dataclass(frozen=True)
class LimiterRef:
    """A limiter as workers see it: its unique name (the key of their permit pools) and handle."""

    name: str
    handle: Any


def create_limiters(ray: Any, run_id: str, limits: Mapping[str, int]) -> dict[str, LimiterRef]:
    """One limiter actor per key (model or provider group), named for `ray list actors`.

    Owned by the driver, killed when ``execute`` ends; it reserves no CPU.
    """
    remote = ray.remote(ConcurrencyLimiter)
    refs = {}
    for key, limit in sorted(limits.items()):
        name = f"limit:{run_id}:{key}:{uuid.uuid4().hex[:8]}"
        handle = remote.options(name=name, namespace=LIMITER_NAMESPACE, num_cpus=0,
                                max_concurrency=10_000).remote(f"{run_id}:{key}", int(limit))
        refs[key] = LimiterRef(name, handle)
    return refs


class PermitPool:
    """A worker process's share of one limiter: permits leased from the actor and handed from
    thread to thread without a round trip. One thread at a time fetches a new lease; a released
    permit is taken by a waiting (or soon returning) thread of this process, and goes back to
    the actor once it has been idle for ``linger_s``. The leases of all processes never exceed
    the limit, and a busy process pays no round trip per call.
    """

    def __init__(self, limiter: Any, holder: str, get: Any, linger_s: float = 0.05) -> None:
        self._limiter = limiter
        self._holder = holder
        self._get = get  # ray.get (injectable for tests)
        self._linger_s = linger_s
        self._cond = threading.Condition()
        self._waiters: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = deque()
        """Trial coroutines waiting for a permit (pipeline.runtime.as_coroutine)."""
        self._free: list[float] = []  # when each free permit was released; newest last
        self._fetching = False
        self._reaper: threading.Thread | None = None
        self.leased = 0
        self.round_trips = 0

    def acquire(self) -> None:
        """A permit for the calling thread or trial coroutine (which waits on its event loop,
        not on the thread)."""
        while True:
            with self._cond:
                if self._free:
                    self._free.pop()  # the newest: old ones may expire back to the actor
                    return
                if not self._fetching:
                    self._fetching = True
                    break
                if not in_coroutine():
                    self._cond.wait()
                    continue
                loop = asyncio.get_running_loop()
                woken = loop.create_future()
                self._waiters.append((loop, woken))
            wait_for(woken)
        granted = False
        try:  # waits at the global limit
            wait_on_ray(self._limiter.acquire.remote(self._holder), self._get)
            granted = True
        finally:
            with self._cond:
                self._fetching = False
                self.leased += granted
                self.round_trips += 1
                self._wake_one()  # the next waiter takes a free permit or fetches

    def _wake_one(self) -> None:
        """Wake a waiting thread and a waiting coroutine (the lock held): whichever comes
        first takes the permit, the other waits again."""
        self._cond.notify()
        if self._waiters:
            loop, woken = self._waiters.popleft()
            loop.call_soon_threadsafe(_settle, woken)

    def release(self) -> None:
        with self._cond:
            self._free.append(time.monotonic())
            self._wake_one()
            if self._reaper is None:
                self._reaper = threading.Thread(target=self._reap, daemon=True,
                                                name="permit-reaper")
                self._reaper.start()

    def _reap(self) -> None:
        """Give permits idle for ``linger_s`` back to the actor; end when nothing is leased."""
        while True:
            time.sleep(self._linger_s / 2)
            with self._cond:
                cutoff = time.monotonic() - self._linger_s
                expired = sum(1 for released in self._free if released <= cutoff)
                del self._free[:expired]
                self.leased -= expired
                self.round_trips += expired
                done = self.leased == 0
                if done:
                    self._reaper = None
            for _ in range(expired):
                self._limiter.release.remote(self._holder)  # fire and forget
            if done:
                return


_pools: dict[str, PermitPool] = {}
_pools_lock = threading.Lock()


def permit_pool(limiter: LimiterRef, holder: str) -> PermitPool:
    """This process's pool for a limiter (one per limiter and worker process)."""
    with _pools_lock:
        pool = _pools.get(limiter.name)
        if pool is None:
            import ray

            pool = _pools[limiter.name] = PermitPool(limiter.handle, holder, ray.get)
        return pool


@dataclass
class CallGate:
    """Worker side, one per attempt: permits, injected faults, and the last Retry-After seen.

    Called as ``gate(model, estimate)`` by ``pipeline.models.client`` around each model call.
    ``holder`` names the worker process at the limiters (the driver reclaims its leases if the
    process dies). Before the call: the group's pause (a 429 or 529 of any trial of this
    process), its rate limiter (rpm, tpm: the estimate is counted), then a permit; a 429 or 529
    pauses the group here and at its rate limiter (pipeline.execution.group_pause).
    """

    holder: str
    limiters: Mapping[str, LimiterRef] = field(default_factory=dict)
    """limit key -> limiter (see ``limit_key``)."""
    faults: Mapping[str, FaultProfile] = field(default_factory=dict)
    retry_after_s: float | None = None
    rng: random.Random = field(default_factory=random.Random)
    rates: Mapping[str, RateRef] = field(default_factory=dict)
    """provider group -> its rate limiter (pipeline.execution.rate_limits)."""
    get: Callable[..., Any] | None = None
    """``ray.get`` (injectable for tests); looked up at the first call that needs it."""
    board: BoardRef | None = None
    """The run's pause board (pipeline.execution.group_pause): followed by this process."""

    @contextmanager
    def __call__(self, model: str, estimate: Callable[[], int] = lambda: 0
                 ) -> Iterator[Callable[[int | None], None] | None]:
        group = group_of(model)
        if self.board is not None:
            follow(self.board, self._ray_get())
        GROUP_PAUSES.wait(group)
        rate = self.rates.get(group)
        counted = self._take(rate, estimate) if rate is not None else 0
        key = limit_key(model, self.limiters) if self.limiters else None
        pool = permit_pool(self.limiters[key], self.holder) if key is not None else None
        if pool is not None:
            pool.acquire()
        try:
            profile = self.faults.get(model)
            if profile is not None:
                _inject(profile, self.rng)
            yield None if rate is None else _corrector(rate, counted)
        except InfraError as exc:
            self.retry_after_s = exc.retry_after_s
            pause_s = pause_of(exc)
            if pause_s is not None:
                GROUP_PAUSES.pause(group, pause_s)
                if self.board is not None:
                    self.board.handle.pause.remote(group, pause_s)  # fire and forget
                if rate is not None:
                    rate.handle.pause.remote(pause_s)  # fire and forget
            raise
        finally:
            if pool is not None:
                pool.release()

    def _take(self, rate: RateRef, estimate: Callable[[], int]) -> int:
        """Wait for the group's rate limiter to grant one call of ``estimate()`` tokens."""
        tokens = estimate()
        wait_on_ray(rate.handle.acquire.remote(tokens), self._ray_get())
        return tokens

    def _ray_get(self) -> Callable[..., Any]:
        if self.get is None:
            import ray

            self.get = ray.get
        return self.get


def _settle(woken: asyncio.Future[None]) -> None:
    if not woken.done():
        woken.set_result(None)


def _corrector(rate: RateRef, counted: int) -> Callable[[int | None], None]:
    """Tells the rate limiter how far the call's reported tokens were from its estimate."""
    def report(tokens: int | None) -> None:
        if tokens is not None and tokens != counted:
            rate.handle.correct.remote(tokens - counted)  # fire and forget
    return report


def _inject(profile: FaultProfile, rng: random.Random) -> None:
    """Apply one fault decision the way the reference HTTP server would (without the wire)."""
    decision = profile.decide(rng)
    pause(decision.delay_s)
    if decision.kind == "rate_limit":
        raise InfraError("rate_limit", "injected rate limit", profile.retry_after_s)
    if decision.kind == "server_error":
        raise InfraError("server_error", "injected server error")
    if decision.kind == "timeout":
        raise InfraError("timeout", "injected timeout")
    if decision.kind == "connection_drop":
        raise InfraError("connection", "injected connection drop")
    if decision.kind == "overloaded":
        raise InfraError("overloaded", "injected overload")
    if decision.kind == "context_length":
        raise AgentError("context_limit", "injected context length exceeded")
