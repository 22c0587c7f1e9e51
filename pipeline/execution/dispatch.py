"""The driver's loop: attempts dispatched in rounds, settled as they end, retried, committed.

``Execution`` is what ``pipeline.execution.executor.execute`` runs once its worker pool is up:

- **Retries live on the driver.** Every finished attempt is settled by ``RetryBook``: an
  infrastructure failure is re-submitted after the policy's backoff (Retry-After honoured),
  possibly to another worker; a worker that dies mid-trial is replaced and its trials come
  back as ``harness_error`` attempts and are retried the same way. Ray's own task retries are
  off so that every attempt is seen and recorded.
- **Bounded**: trials running plus trials waiting out a backoff never exceed ``max_in_flight``;
  the grid is pulled from its iterator only as room frees up.
- **Rounds**: what one round submits goes to each worker in one ``start`` call; each busy
  worker has one ``poll`` out that brings back every attempt that ended. The driver waits on
  a few refs per worker, whatever the number in flight.
- **Parts**: a final attempt's rows stay with its worker, which stages them as parts
  (pipeline.execution.parts); the driver gets its ``Outcome`` and commits the parts
  (``ExecuteOptions.on_part``). A trial is final once its part is committed; one a dead worker
  held uncommitted runs again.
- **Limits** per model or provider group hold across the cluster: concurrent calls
  (pipeline.execution.concurrency), requests and tokens per minute
  (pipeline.execution.rate_limits); a 429 or 529 pauses its whole group
  (pipeline.execution.group_pause).
- **A spend cap** (pipeline.execution.spend): an attempt starts only while what was spent and
  what the attempts in flight reserve (their worst cases) is under it; once reached, no new
  attempt starts.
"""

from __future__ import annotations

import random
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from pipeline.errors import CONFIG_ERROR
from pipeline.execution.attempts import Attempt, RetryBook
from pipeline.execution.breaker import Breaker, keep_outages
from pipeline.execution.clock import REAL_TIME, Clock
from pipeline.execution.concurrency import create_limiters, group_of
from pipeline.execution.group_pause import PauseBook, create_board, pause_s
from pipeline.execution.head import HeadWatch, head_address
from pipeline.execution.outcome import Outcome
from pipeline.execution.parcels import GateConfig, Packer, Parcel, Plan, TrialRunner
from pipeline.execution.parts import Flushed, PartsConfig, WrittenPart
from pipeline.execution.rate_limits import LIMITER_NAMESPACE, RateLimits, create_rate_limiters
from pipeline.execution.retry import RetryPolicy
from pipeline.execution.services import NodeEndpoints
from pipeline.execution.spend import SpendBook, worst_case
from pipeline.execution.worker import Crashed, Finished, Item, WorkerOutput
from pipeline.models.faults import FaultProfile
from pipeline.runtime.phases import mark
from pipeline.trial.run import RunContext, TrialResult, harness_failure
from pipeline.trial.spec import TrialSpec

TICK_S = 1.0
"""Wall seconds between the executor's ticks: a head probe, a write of what is due."""
PROVIDER_FAILURES = frozenset({"rate_limit", "timeout", "connection", "server_error",
                               "overloaded"})
"""Error kinds that say the provider failed (a harness error or a refused configuration does
not move the circuit breaker)."""
UNREACHABLE = frozenset({"connection"})
"""Provider failures that say it is down now, whatever it answered earlier in the trial."""



def _groups_of(spec: TrialSpec) -> list[str]:
    """The provider groups an attempt calls: its agent's, then its user simulator's."""
    groups = [group_of(spec.model.name)]
    if spec.user_model is not None and spec.scenario.user is not None:
        user = group_of(spec.user_model.name)
        if user not in groups:
            groups.append(user)
    return groups


def _models_of(spec: TrialSpec) -> list[str]:
    """The models an attempt calls (and pays): its agent's, then its user simulator's."""
    models = [spec.model.name]
    if spec.user_model is not None and spec.scenario.user is not None:
        models.append(spec.user_model.name)
    return models


def _user_verdict(spec: TrialSpec, outcome: Outcome) -> tuple[str | None, bool | None]:
    """The simulator's provider group and what the attempt says of it: failed (True), answered
    (False) or nothing (None); (None, None) for an attempt with no simulated user."""
    if spec.user_model is None or spec.scenario.user is None:
        return None, None
    group = group_of(spec.user_model.name)
    failure = outcome.user_provider_failure
    answered = bool(outcome.user_model_calls)
    if failure in PROVIDER_FAILURES:
        return group, failure in UNREACHABLE or not answered
    return group, False if answered else None


@dataclass(frozen=True)
class ExecuteOptions:
    """How ``execute`` runs the trials, beyond how many are in flight."""

    retry: RetryPolicy = field(default_factory=RetryPolicy)
    limits: Mapping[str, int] = field(default_factory=dict)
    """Concurrent model calls per model name or provider group (LiteLLM prefix); none = no
    limit beyond ``max_in_flight``."""
    rates: Mapping[str, RateLimits] = field(default_factory=dict)
    """Requests and tokens per minute per provider group, across the cluster."""
    spend: SpendBook | None = None
    """The sweep's spend caps and what it has spent (None: no cap)."""
    faults: Mapping[str, FaultProfile] = field(default_factory=dict)
    """Model name -> faults injected in process around each call (reference models)."""
    prior_attempts: Mapping[str, int] = field(default_factory=dict)
    """trial_id -> attempts already recorded for this run; numbering continues after them."""
    endpoints: NodeEndpoints = field(default_factory=NodeEndpoints)
    """Per-node call options of models served by node services (pipeline.execution.services)."""
    workers: int | None = None
    """Worker actors; default one per node of the cluster (at most ``max_in_flight``)."""
    seed: int | None = None
    """Seed of the retry jitter."""
    on_outage: Callable[[str], None] | None = None
    """Told when a provider group goes down (its trials paused) and when it is back."""
    clock: Clock = REAL_TIME
    """The clock of retry backoffs, breaker probes and outage waits (a scaled one for drills)."""
    on_tick: Callable[[], None] | None = None
    """Called about every ``TICK_S`` of wall time while trials run (the sink writes what is
    due), whether or not an attempt finished."""
    parts: PartsConfig | None = None
    """Workers write their final trials' parts there (pipeline.execution.parts); ``on_part``
    commits each. None: every result comes back to ``on_result``."""
    on_part: Callable[[WrittenPart], None] | None = None
    """Commits a part a worker staged; its trials are final once it returns."""
    on_outcome: Callable[[Outcome], None] | None = None
    """Told of each final attempt a worker keeps for a part, before the part is committed."""
    trial_runner: TrialRunner | None = None
    """Benchmarks only (benchmarks/night_drill.py): the trial's body replaced, to measure the
    pipeline's own cost per trial. No command, spec or flow sets it."""
    coroutines: bool = False
    """Trials of the built-in agent run as coroutines in their workers
    (``SweepConfig.trials_as``), not a thread each."""



class Pool(Protocol):
    """The worker pool as the loop uses it (pipeline.execution.executor.WorkerPool)."""

    actors: list[Any]
    generation: list[int]
    load: list[int]

    def preloaded(self) -> bool: ...
    def pick(self) -> tuple[int, int]: ...
    def start(self, slot: int, plan_id: str, items: list[Item]) -> Any: ...
    def poll(self, slot: int, plan_id: str) -> Any: ...
    def done(self, slot: int) -> None: ...
    def replace(self, slot: int, generation: int) -> str | None: ...
    def forget(self, plan_id: str) -> None: ...


@dataclass(frozen=True)
class Hooks:
    """What the loop asks of the process's Ray session around it."""

    start_pool: Callable[[], Pool]
    head_lost: Callable[[], None]
    """The head is gone: forget the pool, free nothing."""
    unclean: Callable[[], None]
    """The loop ended on an error: trials may still run on the workers; stop them."""
    default_workers: Callable[[], int]
    """Workers when none are asked for."""


@dataclass
class _Flight:
    spec: TrialSpec
    number: int
    slot: int
    generation: int


class Execution:
    """One ``execute``: its limiters, its books, its attempts in flight."""

    def __init__(self, ray: Any, ctx: RunContext, options: ExecuteOptions, max_in_flight: int,
                 on_result: Callable[[TrialResult], None],
                 on_attempt: Callable[[Attempt], None] | None, hooks: Hooks) -> None:
        self.ray = ray
        self.hooks = hooks
        self.ctx = ctx
        self.max_in_flight = max_in_flight
        self.on_result = on_result
        self.on_attempt = on_attempt
        self.clock = options.clock
        self.book = RetryBook(options.retry, options.prior_attempts,
                              rng=random.Random(options.seed), clock=options.clock.now)
        self.limiters = create_limiters(ray, ctx.run_id, options.limits)
        self.rates = create_rate_limiters(ray, ctx.run_id, options.rates)
        size = max(1, min(options.workers or hooks.default_workers(), max_in_flight))
        # One worker process shares its pauses among its trials; more need the board (an
        # actor: a process of its own, spared a sweep on one worker).
        self.board = create_board(ray, ctx.run_id, LIMITER_NAMESPACE) if size > 1 else None
        gates = GateConfig(self.limiters, dict(options.faults), options.endpoints, self.rates,
                           self.board)
        self.parts = options.parts
        self.on_part = options.on_part
        self.on_outcome = options.on_outcome
        self.packer = Packer(Plan(ctx, gates, options.parts, options.trial_runner,
                                  options.coroutines))
        mark("starting workers")
        self.pool = hooks.start_pool()
        if self.pool.preloaded():  # the import started with the services: no trial waits for it
            mark("workers ready (LiteLLM imported)")
        self._first = True
        self.in_flight: dict[str, _Flight] = {}
        """Attempt key (``<trial id>:<number>``) -> the attempt running on a worker."""
        self.outbox: dict[int, list[Item]] = {}
        """slot -> attempts to start on its worker with the next ``start`` call."""
        self.starts: dict[Any, tuple[int, int, list[Parcel]]] = {}
        """A ``start`` call in flight -> its (slot, generation, the parcels it carries)."""
        self.polls: dict[Any, tuple[int, int]] = {}
        """A worker's ``poll`` in flight -> its (slot, generation): one per busy worker."""
        self.finished = 0
        self.stopped = False
        """A provider refused its configuration: no new trial is started (pipeline.errors)."""
        self.breaker = Breaker(max_outage_s=options.retry.max_outage_s,
                               on_change=options.on_outage or mark, clock=options.clock.now)
        keep_outages(ctx.run_id, self.breaker.outages)
        self.parked: dict[str, deque[tuple[TrialSpec, int]]] = {}
        """Trials (and retries) held while their provider group is down or paused."""
        self.pauses = PauseBook(clock=options.clock.now)
        """Provider groups paused by a 429 or 529 (pipeline.execution.group_pause)."""
        self.spend = options.spend
        self.spend_wait: deque[tuple[TrialSpec, int]] = deque()
        """Trials (and retries) held while attempts in flight hold what is left under a spend
        cap (``SpendBook.fits``)."""
        self.head = HeadWatch(head_address(ray))
        self.on_tick = options.on_tick
        self.unsaved: dict[int, dict[tuple[str, int], _Flight]] = {}
        """slot -> final attempts its worker keeps, not yet in a committed part."""
        self.unsaved_since: dict[int, float] = {}
        """slot -> when its oldest unsaved attempt was reported (wall, monotonic)."""
        self.saved_early: set[tuple[str, int]] = set()
        """Attempts whose part was committed before their own output arrived."""
        self.flushing: dict[Any, tuple[int, int, bool]] = {}
        """A worker's flush in flight -> its (slot, generation, whether nothing else was in
        flight when it was asked)."""

    def run(self, source: Iterator[TrialSpec]) -> int:
        clean = False
        try:
            exhausted = False
            while True:
                self._release_spend()
                self._release_parked()
                while (due := self.book.pop_due()) is not None:
                    self._submit_or_park(*due)
                while not exhausted and not self.stopped and self._room():
                    spec = next(source, None)
                    if spec is None:
                        exhausted = True
                    else:
                        self._submit_or_park(spec, self.book.first_attempt(spec))
                self._dispatch()
                if not self.in_flight and not self.book.waiting and not self._held():
                    if not self._unsaved_left():
                        break
                    self._flush(list(self.unsaved), final=True)
                self._collect()
            clean = True
            return self.finished
        finally:
            if self.parts is not None and not self.head.lost:
                self.pool.forget(self.packer.plan_id)
            if self.head.lost:  # nothing to free: every call to Ray would wait for its head
                self.hooks.head_lost()
            else:
                handles = [limiter.handle for limiter in self.limiters.values()]
                handles += [rate.handle for rate in self.rates.values()]
                handles += [self.board.handle] if self.board is not None else []
                for handle in handles:
                    self.ray.kill(handle, no_restart=True)
                if not clean:  # trials may still run on the workers: do not hand them on
                    self.hooks.unclean()

    def _held(self) -> int:
        return sum(len(queue) for queue in self.parked.values()) + len(self.spend_wait)

    def _room(self) -> bool:
        return len(self.in_flight) + self.book.waiting + self._held() < self.max_in_flight

    def _capped(self, spec: TrialSpec) -> bool:
        """A spend cap forbids this attempt: it is not started (``SpendBook.not_started``)."""
        if self.spend is None or self.spend.allows(_models_of(spec)):
            return False
        self.spend.not_started += 1
        return True

    def _drop_capped(self) -> None:
        """Once a cap is reached: the retries and held trials it forbids are not started."""
        if self.spend is None or self.spend.reached() is None:
            return
        spend = self.spend
        spend.not_started += self.book.drop(lambda spec: not spend.allows(_models_of(spec)))
        for group, queue in [*self.parked.items(), ("", self.spend_wait)]:
            kept = deque(item for item in queue if spend.allows(_models_of(item[0])))
            spend.not_started += len(queue) - len(kept)
            if group:
                self.parked[group] = kept
            else:
                self.spend_wait = kept

    def _fits(self, spec: TrialSpec) -> bool:
        """What was spent and is held in flight leaves room under the caps for this attempt."""
        return self.spend is None or self.spend.fits(_models_of(spec))

    def _release_spend(self) -> None:
        """Trials held for the spend cap's room start, in order, while there is room."""
        while self.spend_wait and self._fits(self.spend_wait[0][0]):
            self._submit_or_park(*self.spend_wait.popleft())

    def _submit_or_park(self, spec: TrialSpec, number: int) -> None:
        """Start the attempt, or hold it while a provider it calls (its agent's, its user
        simulator's) is down or paused; not at all once a spend cap forbids it."""
        if self._capped(spec):
            return
        if not self._fits(spec):
            self.spend_wait.append((spec, number))
            return
        for group in _groups_of(spec):
            if (self.parked.get(group) or self.pauses.paused(group)
                    or not self.breaker.allows(group)):
                self.parked.setdefault(group, deque()).append((spec, number))
                return
        self._submit(spec, number)

    def _release_parked(self) -> None:
        """Held trials of a group that is back go on; a down group gets its due probe."""
        for group, queue in list(self.parked.items()):
            while (queue and not self.pauses.paused(group) and self.breaker.allows(group)
                   and self._fits(queue[0][0])):
                spec, number = queue.popleft()
                down = [g for g in _groups_of(spec) if g != group and self.breaker.down(g)
                        and not self.breaker.outage_too_long(g)]
                if down:  # its other provider is down too: it waits for that one's probe
                    self.parked.setdefault(down[0], deque()).append((spec, number))
                    self.breaker.record(group, infra_failed=None)  # this probe was not used
                else:
                    self._submit(spec, number)

    def _submit(self, spec: TrialSpec, number: int) -> None:
        if self._first:
            self._first = False
            mark("trials")
        key = f"{spec.trial_id}:{number}"
        compact = self.packer.pack(spec)
        slot, generation = self.pool.pick()
        parcel = self.packer.parcel(slot, generation, compact)
        self.outbox.setdefault(slot, []).append((compact, key, parcel))
        self.in_flight[key] = _Flight(spec, number, slot, generation)
        if self.spend is not None:
            self.spend.reserve(key, worst_case(spec, self.spend.ceilings))

    def _dispatch(self) -> None:
        """Start what this round submitted: one call per worker."""
        outbox, self.outbox = self.outbox, {}
        for slot, items in outbox.items():
            parcels = [parcel for _, _, parcel in items if parcel is not None]
            ref = self.pool.start(slot, self.packer.plan_id, items)
            self.starts[ref] = (slot, self.pool.generation[slot], parcels)
        self._poll_busy()

    def _poll_busy(self) -> None:
        """A poll out on every worker (of its current generation) with attempts in flight."""
        generation = self.pool.generation
        polled = {slot for slot, seen in self.polls.values() if seen == generation[slot]}
        for slot, load in enumerate(self.pool.load):
            if load > 0 and slot not in polled:
                self.polls[self.pool.poll(slot, self.packer.plan_id)] = (slot, generation[slot])

    def _tick(self) -> None:
        """About once a second: is the head still there, what is due for the sink, which
        worker has held a finished trial too long."""
        self.head.check()
        if self.on_tick is not None:
            self.on_tick()
        if self.parts is not None:
            limit = time.monotonic() - self.parts.flush_interval_s
            self._flush([slot for slot, since in self.unsaved_since.items() if since <= limit])

    def _unsaved_left(self) -> bool:
        return any(self.unsaved.values()) or bool(self.flushing)

    def _flush(self, slots: list[int], final: bool = False) -> None:
        """Ask these slots' workers to write what they hold (one flush at a time each);
        ``final``: nothing is in flight, so what a flush does not report was lost."""
        busy = {slot for slot, _, _ in self.flushing.values()}
        for slot in slots:
            if slot in busy or not self.unsaved.get(slot):
                continue
            generation = self.pool.generation[slot]
            ref = self.pool.actors[slot].flush.remote(self.packer.plan_id)
            self.flushing[ref] = (slot, generation, final)
            self.unsaved_since.pop(slot, None)

    def _collect(self) -> None:
        """Wait for finished attempts, at most until the next retry or probe is due (and at
        most ``TICK_S`` of wall time: the head is probed and due rows written meanwhile)."""
        held = self._held()
        waits = [w for w in (self.book.seconds_to_next(),
                             self.breaker.seconds_to_probe() if held else None,
                             self.pauses.seconds_to_resume() if held else None)
                 if w is not None]
        wait_s = min(waits) if waits else None
        self._tick()
        if not self.in_flight and not self.flushing:
            self.clock.sleep(min(wait_s or 0.0, self.clock.simulated(TICK_S)))
            return
        refs = [*self.polls, *self.starts, *self.flushing]  # a few per worker, not per trial
        wall_s = self.clock.wall(wait_s)
        timeout = TICK_S if wall_s is None else min(wall_s, TICK_S)
        ready, rest = self.ray.wait(refs, num_returns=1, timeout=timeout)
        if ready and rest:
            more, _ = self.ray.wait(rest, num_returns=len(rest), timeout=0)
            ready += more
        for ref in ready:
            self._settle(ref)
        self._poll_busy()
        self._drop_capped()

    def _settle(self, ref: Any) -> None:
        if ref in self.flushing:
            self._flushed(ref)
        elif ref in self.starts:
            self._started(ref)
        else:
            self._polled(ref)

    def _started(self, ref: Any) -> None:
        """A ``start`` call returned: its worker holds the parts it brought."""
        slot, generation, parcels = self.starts.pop(ref)
        try:
            self.ray.get(ref)
        except self.ray.exceptions.RayError as exc:  # its poll says what became of them
            self._worker_failed(slot, generation, exc)
            return
        for parcel in parcels:
            self.packer.confirm(slot, generation, parcel)

    def _polled(self, ref: Any) -> None:
        """A poll returned: settle what ended; poll again while the worker has attempts."""
        slot, generation = self.polls.pop(ref)
        try:
            finished: list[Finished] = self.ray.get(ref)
        except self.ray.exceptions.RayError as exc:  # the worker died, or Ray lost the call
            self._worker_failed(slot, generation, exc)
            return
        if generation != self.pool.generation[slot]:  # given up on: its attempts were ended
            return
        for key, ended in finished:
            flight = self.in_flight.pop(key, None)
            if flight is None:  # its worker was given up on already
                continue
            self.pool.done(flight.slot)
            if isinstance(ended, Crashed):
                self.packer.forget(slot, generation)
                ended = WorkerOutput(harness_failure(flight.spec, self.ctx, ended.message))
            self._ended(flight, ended)

    def _worker_failed(self, slot: int, generation: int, exc: Exception) -> None:
        """A call to a worker failed in Ray (it died, or Ray lost the call): the worker is
        given up (stopped and replaced, once), its attempts end as harness errors (retried)
        and its unsaved trials run again. A worker whose answer was lost is never trusted
        again: a part it staged and reported in that answer must not be committed later."""
        self.packer.forget(slot, generation)
        self.head.confirm()  # or the head is gone (RayHeadLost): not the trials' failure
        dead = self.pool.replace(slot, generation)  # None: replaced already
        for limiter in self.limiters.values() if dead else ():  # the dead process's leases
            limiter.handle.release_holder.remote(dead)
        self._lost(slot, generation)
        message = str(exc).strip().split("\n", 1)[0]
        for key, flight in list(self.in_flight.items()):
            if flight.slot == slot and flight.generation == generation:
                del self.in_flight[key]
                self.pool.done(slot)
                failure = harness_failure(flight.spec, self.ctx,
                                          f"{type(exc).__name__}: {message}")
                self._ended(flight, WorkerOutput(failure))

    def _ended(self, flight: _Flight, output: WorkerOutput) -> None:
        """Settle one attempt that ended on a worker."""
        key = (flight.spec.trial_id, flight.number)
        if output.outcome is None and key in self.saved_early:
            # its part was committed (another call reported it); the worker died before this
            # output came back: the trial is final, not failed
            self.saved_early.discard(key)
            return
        if output.result is not None:
            outcome = Outcome.of(output.result, flight.number)
        else:
            assert output.outcome is not None
            outcome = output.outcome
        free = self._judge(flight, outcome, output.retry_after_s)
        if output.result is None:
            self._keep(flight, outcome)
        else:
            self._settle_result(flight, output.result, output.retry_after_s, free)
        self._commit(output.flushed)

    def _settle_result(self, flight: _Flight, result: TrialResult,
                       retry_after_s: float | None, free: bool) -> None:
        """An attempt that came back whole: retried, or final and handed to ``on_result``."""
        attempt = self.book.settle(flight.spec, flight.number, result, retry_after_s, free=free)
        if self.on_attempt is not None:
            self.on_attempt(attempt)
        if attempt.final:
            self.finished += 1
            self.stopped = self.stopped or result.trial.error_kind == CONFIG_ERROR
            self.on_result(result)

    def _keep(self, flight: _Flight, outcome: Outcome) -> None:
        """A final attempt its worker keeps: it waits for the commit of its part."""
        self.stopped = self.stopped or outcome.error_kind == CONFIG_ERROR
        key = (outcome.trial_id, outcome.number)
        if self.on_outcome is not None:
            self.on_outcome(outcome)
        if key in self.saved_early:
            self.saved_early.discard(key)
            return
        self.unsaved.setdefault(flight.slot, {})[key] = flight
        self.unsaved_since.setdefault(flight.slot, time.monotonic())

    def _commit(self, flushed: Flushed) -> None:
        """Commit what a worker staged (its trials are final now); a failed write stops the
        sweep as the driver's own would."""
        for part in flushed.parts:
            assert self.on_part is not None
            self.on_part(part)
            for outcome in part.outcomes:
                key = (outcome.trial_id, outcome.number)
                self.finished += 1
                self.book.forget(outcome.trial_id)
                for kept in self.unsaved.values():
                    if kept.pop(key, None) is not None:
                        break
                else:
                    self.saved_early.add(key)
        for slot in [slot for slot, kept in self.unsaved.items() if not kept]:
            del self.unsaved[slot]
            self.unsaved_since.pop(slot, None)
        if flushed.error is not None:
            raise flushed.error

    def _flushed(self, ref: Any) -> None:
        slot, generation, final = self.flushing.pop(ref)
        try:
            flushed: Flushed = self.ray.get(ref)
        except self.ray.exceptions.RayError as exc:  # what it held runs again
            self._worker_failed(slot, generation, exc)
            return
        if generation != self.pool.generation[slot]:  # given up on: its trials run again
            return
        self._commit(flushed)
        if final:  # every output had come back: what this flush did not report is gone
            self._lost(slot, None)

    def _lost(self, slot: int, generation: int | None) -> None:
        """The attempts a dead worker (of ``generation``; None: any) kept unsaved run again:
        each gets an ``attempts`` row saying so, and its next attempt, free of the budget."""
        kept = self.unsaved.get(slot, {})
        for key, flight in list(kept.items()):
            if generation is not None and flight.generation != generation:
                continue
            del kept[key]
            result = harness_failure(flight.spec, self.ctx,
                                     "the worker died before the trial's part was committed")
            attempt = self.book.again(flight.spec, flight.number, result)
            if self.on_attempt is not None:
                self.on_attempt(attempt)
        if not kept:
            self.unsaved.pop(slot, None)
            self.unsaved_since.pop(slot, None)

    def _judge(self, flight: _Flight, outcome: Outcome, retry_after_s: float | None) -> bool:
        """What a finished attempt tells the breaker, the pauses and the spend cap; whether a
        retry of it is free (its provider is down)."""
        group = group_of(flight.spec.model.name)
        kind = outcome.error_kind
        provider_failed = kind in PROVIDER_FAILURES
        # An attempt its provider answered before it failed shows a flaky provider, not a down
        # one: to the breaker it is an answer (it ends a probe, closes an outage), and it is
        # never a free retry (its budget applies). Unless nothing listens any more: a refused
        # connection after answers is an outage that began mid-trial, and counts as one.
        answered = outcome.model_calls > 0
        verdict: bool | None = None  # a harness error before any answer: says nothing
        if provider_failed or answered or outcome.status != "incomplete":
            verdict = provider_failed and (kind in UNREACHABLE or not answered)
        verdicts = {group: verdict}
        user_group, user_verdict = _user_verdict(flight.spec, outcome)
        if user_group is not None:  # the simulator's provider, by the same rule
            mine = verdicts.get(user_group)
            verdicts[user_group] = (user_verdict if mine is None or user_verdict
                                    else mine)
        for name, said in verdicts.items():
            self.breaker.record(name, infra_failed=said)
        self._pause(group, kind, retry_after_s)
        if user_group is not None:
            self._pause(user_group, outcome.user_provider_failure, None)
        if self.spend is not None:
            self.spend.add(list(outcome.charges),
                           attempt=f"{flight.spec.trial_id}:{flight.number}")
        free = (not answered and self.breaker.down(group)
                and not self.breaker.outage_too_long(group))
        if user_group is not None and user_verdict and not answered:
            free = free or (self.breaker.down(user_group)
                            and not self.breaker.outage_too_long(user_group))
        return free

    def _pause(self, group: str, kind: str | None, retry_after_s: float | None) -> None:
        """A 429 or 529 pauses the group: none of its attempts starts until then."""
        seconds = pause_s(kind, retry_after_s)
        if seconds is not None:
            self.pauses.pause(group, seconds)

