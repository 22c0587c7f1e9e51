"""Run trials on Ray with a bounded number in flight; retries and results stream to callbacks.

Ray is imported lazily. A local Ray is started unless an address is given (``--ray-address``
or ``RAY_ADDRESS``) with only the processes a run uses (pipeline.runtime.local_ray); see
pipeline.runtime.hygiene for how its processes are kept on loopback.

Where things happen:

- **Workers** are Ray actors (``TrialWorker``, pipeline.execution.worker; one per node of the
  cluster by default, each pinned softly to its node), each running up to
  ``ceil(max_in_flight / workers)`` trials at once in its trial threads: a trial mostly waits
  on its model, so one process serves many trials, and every further process costs its own
  interpreter and imports (with LiteLLM ~360 MiB a process). ``ExecuteOptions.workers`` asks
  for more (CPU-bound work, the in-process reference models, is held to one core by a
  process's GIL), spread over the nodes by CPUs.
- **The driver's loop** (dispatch in rounds, retries, the bound on what is in flight, limits,
  the spend cap, committing the workers' parts) is pipeline.execution.dispatch; here are the
  Ray session, the worker pool, and ``execute``, which joins them.
"""

from __future__ import annotations

import math
import os
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from pipeline.execution.attempts import Attempt
from pipeline.execution.dispatch import TICK_S, Execution, Hooks
from pipeline.execution.dispatch import ExecuteOptions as ExecuteOptions
from pipeline.execution.worker import (
    CONTROL_CALLS,
    Item,
    TrialWorker,
)
from pipeline.runtime.hygiene import WORKER_ENV
from pipeline.runtime.local_ray import NodeInThread
from pipeline.runtime.startup import RAY_START_ENV
from pipeline.runtime.startup import RayStartError as RayStartError
from pipeline.trial.run import RunContext, TrialResult
from pipeline.trial.spec import TrialSpec
from pipeline.util.version import source_fingerprint

SINGLE_MACHINE_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
DEFAULT_OBJECT_STORE_BYTES = 256 * 1024 * 1024
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


def cluster_in_flight(ray: Any, per_node: int) -> int:
    """``per_node`` trials in flight for each alive node with a CPU (one node's worth while
    none is known)."""
    nodes = sum(1 for node in ray.nodes()
                if node.get("Alive") and node["Resources"].get("CPU", 0) > 0)
    return per_node * max(1, nodes)


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

    def poll(self, slot: int, plan_id: str) -> Any:
        """Ask the slot's worker for the plan's attempts that ended (``TrialWorker.poll``)."""
        return self.actors[slot].poll.remote(plan_id, TICK_S)

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

    options = options or ExecuteOptions()
    workers = options.workers
    hooks = Hooks(start_pool=lambda: sized_pool(ray, max_in_flight, workers),
                  head_lost=head_was_lost, unclean=shutdown_pool,
                  default_workers=lambda: default_workers(ray, max_in_flight))
    run = Execution(ray, ctx, options, max_in_flight, on_result, on_attempt, hooks)
    return run.run(iter(specs))


