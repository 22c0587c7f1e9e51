"""Run trials on Ray with a bounded number in flight; retries and results stream to callbacks.

Ray is imported lazily. A local Ray is started unless an address is given (``--ray-address``
or ``RAY_ADDRESS``) with only the processes a run uses (pipeline.runtime.local_ray); see
pipeline.runtime.hygiene for how its processes are kept on loopback.

Where things happen:

- **Workers** are threaded Ray actors (``TrialWorker``, one per node of the cluster by default,
  each pinned softly to its node), each running up to ``ceil(max_in_flight / workers)`` trials
  at once in threads: a trial mostly waits on its model, so one process serves many trials,
  and every further process costs its own interpreter and imports (with LiteLLM ~360 MiB a
  process). ``ExecuteOptions.workers`` asks for more (CPU-bound work, the in-process
  reference models, is held to one core by a process's GIL), spread over the nodes by CPUs.
- **Retries live on the driver.** Every finished attempt is settled by ``RetryBook``: an
  infrastructure failure is re-submitted after the policy's backoff (Retry-After honoured),
  possibly to another worker; a worker that dies mid-trial is replaced and its trials come
  back as ``harness_error`` attempts and are retried the same way. Ray's own task retries are
  off so that every attempt is seen and recorded.
- **Bounded**: trials running plus trials waiting out a backoff never exceed ``max_in_flight``;
  the grid is pulled from its iterator only as room frees up.
- **Limits** per model or provider group hold across the cluster: concurrent calls
  (pipeline.execution.concurrency), requests and tokens per minute
  (pipeline.execution.rate_limits); a 429 or 529 pauses its whole group
  (pipeline.execution.group_pause).
- **A spend cap** (pipeline.execution.spend): an attempt starts only while what was spent and
  what the attempts in flight reserve (their worst cases) is under it; once reached, no new
  attempt starts.
"""

from __future__ import annotations

import math
import os
import random
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

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
from pipeline.execution.worker import (
    CONTROL_CALLS,
    Crashed,
    Finished,
    Item,
    TrialWorker,
    WorkerOutput,
)
from pipeline.models.faults import FaultProfile
from pipeline.runtime.hygiene import WORKER_ENV
from pipeline.runtime.local_ray import NodeInThread
from pipeline.runtime.phases import mark
from pipeline.runtime.startup import RAY_START_ENV
from pipeline.runtime.startup import RayStartError as RayStartError
from pipeline.trial.run import RunContext, TrialResult, harness_failure
from pipeline.trial.spec import TrialSpec
from pipeline.util.version import source_fingerprint

TICK_S = 1.0
"""Wall seconds between the executor's ticks: a head probe, a write of what is due."""
SINGLE_MACHINE_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
DEFAULT_OBJECT_STORE_BYTES = 256 * 1024 * 1024
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


TRIALS_PER_WORKER = 64
"""Trials in flight one worker process takes before a second one on its node helps: its trial
threads share one interpreter lock, and at about 5 ms of Python per model call one process
answers about 170 calls/s (benchmarks/throughput.py (b)), whatever the latency allows."""


def default_workers(ray: Any, max_in_flight: int = TRIALS_PER_WORKER) -> int:
    """Worker actors when none are asked for: per alive node with a CPU, one for each
    ``TRIALS_PER_WORKER`` trials in flight, at most one per CPU of the node (a sweep with the
    default 64 in flight has one worker per node: each worker is a process of its own, with
    LiteLLM loaded)."""
    wanted = max(1, math.ceil(max_in_flight / TRIALS_PER_WORKER))
    return max(1, sum(min(wanted, int(node["Resources"].get("CPU", 0)))
                      for node in ray.nodes() if node.get("Alive")))


def cpu_slots(ray: Any) -> list[str]:
    """One entry per CPU of the cluster's alive nodes (node ids), the nodes interleaved."""
    per_node = [[node["NodeID"]] * int(node["Resources"].get("CPU", 0))
                for node in ray.nodes() if node.get("Alive")]
    longest = max((len(slots) for slots in per_node), default=0)
    return [slots[i] for i in range(longest) for slots in per_node if i < len(slots)]


PRELOAD_WAIT_S = 300.0
"""Longest the first dispatch waits for the workers' LiteLLM import (a loaded machine takes
tens of seconds); past it trials are dispatched and wait for the import themselves."""

WARM_NAMESPACE = "agentsweep"
WARM_PREFIX = "agentsweep-worker-"


class WorkerPool:
    """The TrialWorker actors, each pinned (softly) to the node of a CPU slot (the nodes taken in
    turn, so that workers beyond one per node go to the nodes with more CPUs); a dead one
    is replaced. Kept across ``execute`` calls of one Ray session (imports are paid once). It
    reserves a token 0.01 CPU per actor: with none, placement on a two-node cluster was seen to
    put every actor on one node despite the soft affinity.

    ``warm``: on a cluster that outlives the run (``agentsweep up``, or a remote one) the actors
    are detached and named by the code's fingerprint, threads and slot, so the next run of the
    same code finds them already started (LiteLLM imported); workers of other code are stopped."""

    def __init__(self, ray: Any, nodes: list[str | None], threads: int,
                 key: tuple[str, ...], warm: bool = False) -> None:
        self.ray = ray
        self.size = len(nodes)
        self.nodes = nodes
        self.threads = threads
        self.key = key
        self.warm = warm
        self.fingerprint = source_fingerprint()[:12]
        self.generation = [0] * self.size
        self.worker_ids = [self._worker_id(slot) for slot in range(self.size)]
        self.actors = [self._spawn(slot) for slot in range(self.size)]
        self.load = [0] * self.size
        self._preloading: list[Any] = []

    def _worker_id(self, slot: int) -> str:
        if not self.warm:
            return uuid.uuid4().hex
        return (f"{WARM_PREFIX}{self.fingerprint}-{self.threads}t-{self.size}w-{slot}-"
                f"g{self.generation[slot]}")

    def _spawn(self, slot: int) -> Any:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        node = self.nodes[slot]
        strategy = "SPREAD" if node is None else NodeAffinitySchedulingStrategy(node, soft=True)
        options: dict[str, Any] = {"num_cpus": 0.01, "max_concurrency": CONTROL_CALLS,
                                   "max_restarts": 0, "max_task_retries": 0,
                                   "scheduling_strategy": strategy}
        if self.warm:
            options.update(name=self.worker_ids[slot], namespace=WARM_NAMESPACE,
                           lifetime="detached", get_if_exists=True)
        return self.ray.remote(TrialWorker).options(**options).remote(self.worker_ids[slot],
                                                                      self.threads)

    def preload(self) -> None:
        """Every worker imports LiteLLM as soon as it has started (``TrialWorker.preload``);
        nothing waits for it here (``preloaded`` does)."""
        self._preloading = [actor.preload.remote() for actor in self.actors]

    def preloaded(self, timeout_s: float = PRELOAD_WAIT_S) -> bool:
        """Wait until every worker asked to ``preload`` has imported LiteLLM (at most
        ``timeout_s``): no trial is then dispatched to wait for an import. Whether they all
        have (False when none was asked to, or the wait ran out: trials then wait as before)."""
        refs, self._preloading = self._preloading, []
        if not refs:
            return False
        done, _ = self.ray.wait(refs, num_returns=len(refs), timeout=timeout_s)
        try:
            return len(done) == len(refs) and all(self.ray.get(done))
        except Exception:  # a worker died importing: its trials meet it and are retried
            return False

    def pick(self) -> tuple[int, int]:
        """The least loaded worker's slot and generation, counted as one more trial busy."""
        slot = min(range(self.size), key=self.load.__getitem__)
        self.load[slot] += 1
        return slot, self.generation[slot]

    def start(self, slot: int, plan_id: str, items: list[Item]) -> Any:
        """Start attempts on the slot's worker (``TrialWorker.start``); the call's ref."""
        return self.actors[slot].start.remote(plan_id, items)

    def poll(self, slot: int) -> Any:
        """Ask the slot's worker for the attempts that ended (``TrialWorker.poll``)."""
        return self.actors[slot].poll.remote(TICK_S)

    def done(self, slot: int) -> None:
        self.load[slot] -= 1

    def replace(self, slot: int, generation: int) -> str | None:
        """Replace the actor of a slot after it died (once per death, not per lost trial);
        returns the dead worker's id the first time."""
        if self.generation[slot] != generation:
            return None
        dead = self.worker_ids[slot]
        self.ray.kill(self.actors[slot], no_restart=True)
        self.generation[slot] += 1
        self.worker_ids[slot] = self._worker_id(slot)
        self.actors[slot] = self._spawn(slot)
        return dead

    def forget(self, plan_id: str) -> None:
        """Every worker lets go of a finished run's buffer (nothing waits for it)."""
        for actor in self.actors:
            actor.forget.remote(plan_id)

    def alive(self) -> bool:
        """Every worker answers (one died while idle: build a new pool rather than lose a trial
        attempt to it)."""
        try:
            self.ray.get([actor.pid.remote() for actor in self.actors], timeout=30)
            return True
        except (self.ray.exceptions.RayError, TimeoutError):
            return False

    def shutdown(self) -> None:
        for actor in self.actors:
            self.ray.kill(actor, no_restart=True)
        self.actors = []


_pool: WorkerPool | None = None


def sized_pool(ray: Any, max_in_flight: int, workers: int | None = None) -> WorkerPool:
    """The pool a sweep of ``max_in_flight`` trials uses: ``workers`` actors (default one per
    node), at most one per trial in flight, with threads enough for all of them. Asked for
    before the trials (pipeline.sweep.stages.services_ahead), it starts the workers early and
    ``execute`` finds them started."""
    size = max(1, min(workers or default_workers(ray, max_in_flight), max_in_flight))
    return worker_pool(ray, size, math.ceil(max_in_flight / size))


def worker_pool(ray: Any, size: int, threads: int) -> WorkerPool:
    """The session's pool of ``size`` workers with at least ``threads`` threads each."""
    global _pool
    context = ray.get_runtime_context()
    key = (str(context.gcs_address), str(context.get_node_id()), str(context.get_job_id()))
    if (_pool is not None and (_pool.key, _pool.size) == (key, size)
            and _pool.threads >= threads and _pool.alive()):
        return _pool
    shutdown_pool()
    slots: list[str | None] = list(cpu_slots(ray)) or [None]
    nodes = [slots[i % len(slots)] for i in range(size)]
    warm = not _cluster_is_ours
    _pool = WorkerPool(ray, nodes, threads, key, warm=warm)
    if warm:
        _retire_other_warm_workers(ray, keep=set(_pool.worker_ids))
    return _pool


def _retire_other_warm_workers(ray: Any, keep: set[str]) -> None:
    """Warm workers this run does not use: those of other code (their fingerprint differs)
    are stopped; those of this code in a pool of another shape (threads, workers) are stopped
    when idle, so that a stack keeps one pool, not one per shape of sweep ever run. A pool
    another run is using now is left alone."""
    current = f"{WARM_PREFIX}{source_fingerprint()[:12]}-"
    for entry in ray.util.list_named_actors(all_namespaces=True):
        name = entry.get("name", "") if isinstance(entry, dict) else str(entry)
        if not (isinstance(entry, dict) and entry.get("namespace") == WARM_NAMESPACE
                and name.startswith(WARM_PREFIX)) or name in keep:
            continue
        try:
            actor = ray.get_actor(name, namespace=WARM_NAMESPACE)
            if name.startswith(current) and ray.get(actor.running_attempts.remote(),
                                                    timeout=10) != 0:
                continue  # another run's pool, busy
            ray.kill(actor, no_restart=True)
        except (ValueError, ray.exceptions.RayError, TimeoutError):  # gone, dying or stuck
            continue


def shutdown_pool(keep_warm: bool = False) -> None:
    """Stop the pool's workers; a warm pool's are only let go of when ``keep_warm``."""
    global _pool
    if _pool is not None:
        if not (keep_warm and _pool.warm):
            try:
                _pool.shutdown()
            except Exception:  # Ray is already gone (shut down elsewhere): nothing to free
                pass
        _pool = None


def head_was_lost() -> None:
    """The Ray head is gone: forget the pool (its workers went with the head) and free
    nothing on the way out (ray_session)."""
    global _pool, _head_lost
    _pool = None
    _head_lost = True


_head_lost = False
"""The connected Ray lost its head during this session (pipeline.execution.head)."""

_local_node: NodeInThread | None = None
"""The local Ray this process started (pipeline.runtime.local_ray), stopped with the session."""
_early_node: NodeInThread | None = None
"""A local Ray started ahead of its session (``start_local_ray_early``), not joined yet."""

_sessions_open = 0
"""How many ``ray_session`` blocks of this process are open (``session_open``)."""

_cluster_is_ours = True
"""Whether the connected Ray was started by this process (ray_session): its workers die with
it. A cluster we only joined outlives the run, and its workers stay warm."""


@contextmanager
def ray_session(address: str | None = None, num_cpus: int | None = None,
                object_store_bytes: int = DEFAULT_OBJECT_STORE_BYTES) -> Iterator[Any]:
    """Connect to a cluster, or start (and later stop) a local Ray kept on loopback."""
    address = address or os.environ.get("RAY_ADDRESS") or None
    if not address or _is_loopback(address):
        # A local Ray binds and dials 127.0.0.1 instead of the machine's network address; a
        # driver joining a cluster on 127.0.0.1 would otherwise dial the machine's interface.
        os.environ[SINGLE_MACHINE_SWITCH] = "0"
    import ray

    global _sessions_open
    if ray.is_initialized():  # joined ahead (pipeline.sweep.stages.services_ahead)
        _sessions_open += 1
        try:
            with _sigterm_as_interrupt():  # again: a flow started since has its own handler
                yield ray
        finally:
            _sessions_open -= 1
        return
    common: dict[str, Any] = {
        "log_to_driver": False,
        "runtime_env": {"env_vars": WORKER_ENV},
        "logging_level": "WARNING",
        "configure_logging": True,
    }
    global _cluster_is_ours
    _cluster_is_ours = not address
    try:
        _init(ray, address, num_cpus, object_store_bytes, common)
    except (ConnectionError, TimeoutError, RuntimeError, SystemExit) as exc:  # Ray exits
        where = f"the Ray cluster at {address}" if address else "a local Ray"
        lines = str(exc).strip().splitlines()
        raise RayStartError(f"could not start or join {where}: "
                            f"{lines[0] if lines else repr(exc)}",
                            None if address else RAY_START_ENV) from exc
    global _head_lost
    _head_lost = False
    _sessions_open += 1
    try:
        with _sigterm_as_interrupt():
            yield ray
    finally:
        _sessions_open -= 1
        if not _head_lost:
            shutdown_pool(keep_warm=True)
        ray.shutdown()
        _stop_local_node()


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """While the driver runs a sweep on Ray, SIGTERM (a scheduler stopping it, Prefect
    cancelling its flow run) stops it as Ctrl-C does: what finished is saved, the command says
    how to resume. Ray's core worker installs a SIGTERM handler at ``ray.init`` that prints a
    C++ stack dump and kills the process, and Prefect's flow engine one that raises inside
    Ray's C waits (a SystemError); the driver sends itself SIGINT instead, which those waits
    turn into KeyboardInterrupt. Only in the main thread, where Python runs signal handlers."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, lambda *_: os.kill(os.getpid(), signal.SIGINT))
    try:
        yield
    finally:  # a handler installed outside Python (Ray's) cannot be put back: the default
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def session_open() -> bool:
    """A ``ray_session`` of this process is open (the driver is connected to a Ray). Asked
    instead of ``ray.is_initialized()``: a local Ray starting early imports ``ray`` in another
    thread, and a half-imported module has no ``is_initialized`` yet."""
    return _sessions_open > 0


def _init(ray: Any, address: str | None, num_cpus: int | None, object_store_bytes: int,
          common: dict[str, Any]) -> None:
    global _local_node, _early_node
    if address:
        ray.init(address=address, namespace=WARM_NAMESPACE, **common)
        return
    starter, _early_node = _early_node, None
    if starter is None or starter.params != (num_cpus, object_store_bytes, _ray_temp_dir()):
        if starter is not None:
            starter.stop()
        starter = NodeInThread(num_cpus, object_store_bytes, _ray_temp_dir())
    try:
        ray.init(address=starter.node().address, **common)
    except BaseException:  # Ctrl-C included: a node nobody joined must not outlive the call
        starter.stop()
        raise
    _local_node = starter


def start_local_ray_early(num_cpus: int | None = None,
                          object_store_bytes: int = DEFAULT_OBJECT_STORE_BYTES) -> None:
    """Start the local Ray a later ``ray_session()`` of this process joins (a cold run starts it
    before Prefect's import and API, which then take their time beside it)."""
    global _early_node
    if _early_node is None:
        os.environ[SINGLE_MACHINE_SWITCH] = "0"
        _early_node = NodeInThread(num_cpus, object_store_bytes, _ray_temp_dir())


def cancel_early_ray() -> None:
    """Stop a local Ray started early that no session joined (its sweep was refused)."""
    global _early_node
    if _early_node is not None:
        starter, _early_node = _early_node, None
        starter.stop()


def _ray_temp_dir() -> str:
    return os.environ.get("RAY_TMPDIR", "/tmp/agentsweep-ray")


def _stop_local_node() -> None:
    global _local_node
    if _local_node is not None:
        node, _local_node = _local_node, None
        node.stop()


def _is_loopback(address: str) -> bool:
    """The literal loopback names Ray rewrites into the machine's address (other 127.x
    addresses it leaves alone: a multi-node cluster on one machine uses those)."""
    host = address.split("://", 1)[-1].rsplit(":", 1)[0].strip("[]")
    return host in ("127.0.0.1", "localhost")


def execute(specs: Iterable[TrialSpec], ctx: RunContext, on_result: Callable[[TrialResult], None],
            max_in_flight: int = 64, *, options: ExecuteOptions | None = None,
            on_attempt: Callable[[Attempt], None] | None = None) -> int:
    """Run every spec to a final outcome on the connected Ray; returns the number of trials.

    ``on_attempt`` sees every attempt (retried ones too) before ``on_result`` sees the final
    result of its trial. At most ``max_in_flight`` trials run or wait for a retry at once.
    """
    import ray

    run = _Execution(ray, ctx, options or ExecuteOptions(), max_in_flight, on_result, on_attempt)
    return run.run(iter(specs))


@dataclass
class _Flight:
    spec: TrialSpec
    number: int
    slot: int
    generation: int


class _Execution:
    def __init__(self, ray: Any, ctx: RunContext, options: ExecuteOptions, max_in_flight: int,
                 on_result: Callable[[TrialResult], None],
                 on_attempt: Callable[[Attempt], None] | None) -> None:
        self.ray = ray
        self.ctx = ctx
        self.max_in_flight = max_in_flight
        self.on_result = on_result
        self.on_attempt = on_attempt
        self.clock = options.clock
        self.book = RetryBook(options.retry, options.prior_attempts,
                              rng=random.Random(options.seed), clock=options.clock.now)
        self.limiters = create_limiters(ray, ctx.run_id, options.limits)
        self.rates = create_rate_limiters(ray, ctx.run_id, options.rates)
        size = max(1, min(options.workers or default_workers(ray, max_in_flight), max_in_flight))
        # One worker process shares its pauses among its trials; more need the board (an
        # actor: a process of its own, spared a sweep on one worker).
        self.board = create_board(ray, ctx.run_id, LIMITER_NAMESPACE) if size > 1 else None
        gates = GateConfig(self.limiters, dict(options.faults), options.endpoints, self.rates,
                           self.board)
        self.parts = options.parts
        self.on_part = options.on_part
        self.on_outcome = options.on_outcome
        self.packer = Packer(Plan(ctx, gates, options.parts, options.trial_runner))
        mark("starting workers")
        self.pool = sized_pool(ray, max_in_flight, options.workers)
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
                head_was_lost()
            else:
                handles = [limiter.handle for limiter in self.limiters.values()]
                handles += [rate.handle for rate in self.rates.values()]
                handles += [self.board.handle] if self.board is not None else []
                for handle in handles:
                    self.ray.kill(handle, no_restart=True)
                if not clean:  # trials may still run on the workers: do not hand them on
                    shutdown_pool()

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
        """Start what this round submitted: one call per worker, and a poll on each busy
        worker that has none."""
        outbox, self.outbox = self.outbox, {}
        for slot, items in outbox.items():
            parcels = [parcel for _, _, parcel in items if parcel is not None]
            ref = self.pool.start(slot, self.packer.plan_id, items)
            self.starts[ref] = (slot, self.pool.generation[slot], parcels)
        polled = {slot for slot, _ in self.polls.values()}
        for slot in outbox:
            if slot not in polled:
                self.polls[self.pool.poll(slot)] = (slot, self.pool.generation[slot])

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
        for key, ended in finished:
            flight = self.in_flight.pop(key, None)
            if flight is None:  # its worker was given up on already
                continue
            self.pool.done(flight.slot)
            if isinstance(ended, Crashed):
                self.packer.forget(slot, generation)
                ended = WorkerOutput(harness_failure(flight.spec, self.ctx, ended.message))
            self._ended(flight, ended)
        if generation == self.pool.generation[slot] and self.pool.load[slot] > 0:
            self.polls[self.pool.poll(slot)] = (slot, generation)

    def _worker_failed(self, slot: int, generation: int, exc: Exception) -> None:
        """A call to a worker failed in Ray: its attempts end as harness errors (retried), and
        a dead worker is replaced, its unsaved trials run again."""
        exceptions = self.ray.exceptions
        self.packer.forget(slot, generation)
        self.head.confirm()  # or the head is gone (RayHeadLost): not the trials' failure
        dead = None
        if isinstance(exc, exceptions.RayActorError):
            dead = self.pool.replace(slot, generation)
        for limiter in self.limiters.values() if dead else ():  # the dead process's leases
            limiter.handle.release_holder.remote(dead)
        if dead:
            self._lost(slot, generation)
        if dead is None and isinstance(exc, exceptions.RayActorError):
            return  # replaced already: its attempts were ended then
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
        except self.ray.exceptions.RayError:  # the worker died: what it held runs again
            self.head.confirm()
            self.packer.forget(slot, generation)
            dead = self.pool.replace(slot, generation)
            for limiter in self.limiters.values() if dead else ():
                limiter.handle.release_holder.remote(dead)
            self._lost(slot, generation)
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

