"""The trial worker: a Ray actor that runs many attempts at once and hands back what finished.

The driver starts attempts in batches (``start``: whatever it dispatched in one round) and
collects what finished with one long poll per worker (``poll``), so its cost per trial does not
grow with the number in flight: it waits on one reference per worker, not one per trial. A
trial's body runs in one of the worker's trial threads (``threads`` of them), or, when its
plan says so (``SweepConfig.trials_as``), as a coroutine on the worker's event loop
(pipeline.runtime.as_coroutine: the built-in agent's trials, its model calls' waits handed to
the loop), so ten thousand can wait at once without a thread each; a coroutine body (a
benchmark's stub, pipeline.execution.parcels.TrialRunner) runs on that loop too.

A final attempt's rows stay in the worker and are staged as parts (pipeline.execution.parts);
the driver gets its ``Outcome``. ``run`` runs one attempt and returns its output directly.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import random
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from pipeline.execution.attempts import is_retryable
from pipeline.execution.concurrency import CallGate
from pipeline.execution.outcome import Outcome
from pipeline.execution.parcels import CompactSpec, Holder, Parcel, Plan
from pipeline.execution.parts import Flushed, PartBuffer, PartsConfig
from pipeline.runtime.as_coroutine import off_loop, run_as_coroutine
from pipeline.trial.run import RunContext, TrialResult, harness_failure, run_trial
from pipeline.trial.spec import TrialSpec

CONTROL_CALLS = 8
"""The actor's own concurrent calls (start, poll, flush, pid...): trials run in its threads."""
POLL_LINGER_S = 0.02
"""How long a poll that found an ended attempt waits for more to end: one answer then carries
several, and the driver pays Ray's per-call cost once for them. Small beside a trial's
seconds."""
PLAN_SILENT_S = 1800.0
"""How long a plan's driver may go without a ``start`` or ``poll`` before the worker lets go of
what it keeps for it (its unpolled endings, its unwritten part): a driver polls a busy worker
all the time, and a dead one (kill -9, a lost node) never calls ``forget``. What is let go is
what its resume runs again."""


@dataclass(frozen=True)
class WorkerOutput:
    result: TrialResult | None
    """The attempt's rows; None when its worker keeps them for a part (``outcome``)."""
    retry_after_s: float | None = None
    """Retry-After of the infrastructure error that ended the attempt, if the provider sent one."""
    outcome: Outcome | None = None
    """A final attempt whose rows the worker keeps (pipeline.execution.parts)."""
    flushed: Flushed = field(default_factory=Flushed)
    """Parts the worker staged since it last reported them."""


@dataclass(frozen=True)
class Crashed:
    """An attempt that failed in the worker's own code before its trial ran (its parts were
    missing, say): a harness error for the driver, which also forgets what the worker holds."""

    message: str


Finished = tuple[str, WorkerOutput | Crashed]
"""An attempt's key (``<trial id>:<number>``) and how it ended."""
Item = tuple[CompactSpec, str, Parcel | None]
"""An attempt to start: its compact spec, its key, the parts the worker may lack."""


TRIAL_THREADS_SWITCH_INTERVAL_S = 0.02
"""How long a trial thread may hold the interpreter lock before a waiting one asks for it
(CPython's default: 0.005 s). Each waiting thread asks when its wait times out, so with tens
of trial threads ready at once the lock changed hands mostly on demand, not when a thread
blocked on its socket. Measured (benchmarks/model_call_cpu.py --threads 64, idle machine): 3.97
ms CPU per LiteLLM call at 0.005 s, 3.56 ms at 0.02 s and 3.57 ms at 0.05 s; one thread alone:
3.1 ms either way. A thread waiting on the network lets go of the lock at once, so a
latency-bound sweep's threads are no slower to start. Set at a worker's first trial, not when it
starts: while it imports LiteLLM (one thread, busy for about 2 s), Ray's own threads would wait
longer for the lock, and a cold run's first trial came about 0.3 s later."""


class TrialWorker:
    """A Ray actor that runs trials in its ``threads`` trial threads. ``worker_id`` names it at
    the limiters, which lease permits to the process as a whole. The process is the actor's
    own: its interpreter's switch interval is set for the trial threads."""

    def __init__(self, worker_id: str, threads: int = 64) -> None:
        # LiteLLM is imported by the first call that needs it (pipeline.models.client): a
        # worker running only in-process models (the reference models) never pays for it.
        self.worker_id = worker_id
        self.threads = threads
        self.holder = Holder()
        self._running = 0
        self._ran = False
        self._running_lock = threading.Lock()
        self._buffers: dict[str, PartBuffer] = {}
        """plan id -> the run's finished trials not yet in a part."""
        self._pool: ThreadPoolExecutor | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._done: dict[str, list[Finished]] = {}
        """plan id -> its attempts that ended since its driver's last poll: drivers sharing
        a warm worker (the shards of a run, other runs) each get their own."""
        self._done_ready = threading.Condition()
        self._heard: dict[str, float] = {}
        """plan id -> when its driver last called (``start``, ``poll``), or when an attempt of
        it ended; guarded by ``_done_ready``."""
        self.clock = time.monotonic

    def running_attempts(self) -> int:
        """Attempts this worker runs now (0: a warm pool no run uses may be retired)."""
        return self._running

    def trial_threads(self) -> int:
        """Trial threads this worker has started (none while its trials ran as coroutines)."""
        with self._running_lock:
            return 0 if self._pool is None else len(self._pool._threads)

    def run(self, plan_id: str, compact: CompactSpec, attempt_key: str,
            parcel: Parcel | None = None) -> WorkerOutput:
        """Run one attempt (``attempt_key``: ``<trial id>:<number>``); ``parcel`` brings the
        run's shared parts this worker lacks (pipeline.execution.parcels)."""
        self._begin()
        try:
            spec, plan = self.holder.unpack(plan_id, compact, parcel)
            return self._run(plan_id, spec, plan, attempt_key)
        finally:
            self._end()

    def start(self, plan_id: str, items: list[Item]) -> None:
        """Start attempts; each one's ending waits for ``poll``. The parts its parcels bring
        are stored before this returns (a later ``start`` may count on them)."""
        self._heard_from(plan_id)
        for compact, key, parcel in items:
            try:
                spec, plan = self.holder.unpack(plan_id, compact, parcel)
            except Exception as exc:  # a harness bug (missing parts): the driver retries it
                self._finish(plan_id, key, Crashed(f"{type(exc).__name__}: {exc}"))
                continue
            self._begin()
            if _is_async(plan.trial_runner):
                asyncio.run_coroutine_threadsafe(
                    self._run_async(plan_id, spec, plan, key), self._event_loop())
            elif plan.coroutines and plan.trial_runner is None and spec.agent.builtin:
                asyncio.run_coroutine_threadsafe(
                    run_as_coroutine(self._run_and_finish, plan_id, spec, plan, key),
                    self._event_loop())
            else:
                self._trial_threads().submit(self._run_and_finish, plan_id, spec, plan, key)

    def poll(self, plan_id: str, timeout_s: float, linger_s: float = POLL_LINGER_S
             ) -> list[Finished]:
        """The plan's attempts that ended since its last poll; waits up to ``timeout_s`` for
        one, then ``linger_s`` more for others to join it."""
        self._heard_from(plan_id)
        with self._done_ready:
            if not self._done.get(plan_id):
                self._done_ready.wait_for(lambda: bool(self._done.get(plan_id)), timeout_s)
            if self._done.get(plan_id):
                deadline = time.monotonic() + linger_s
                while (left := deadline - time.monotonic()) > 0:
                    self._done_ready.wait(left)
            return self._done.pop(plan_id, [])

    def _begin(self) -> None:
        with self._running_lock:
            if not self._ran:
                sys.setswitchinterval(TRIAL_THREADS_SWITCH_INTERVAL_S)
                self._ran = True
            self._running += 1

    def _end(self) -> None:
        with self._running_lock:
            self._running -= 1

    def _finish(self, plan_id: str, key: str, ended: WorkerOutput | Crashed) -> None:
        with self._done_ready:
            self._done.setdefault(plan_id, []).append((key, ended))
            self._heard.setdefault(plan_id, self.clock())
            self._done_ready.notify_all()

    def _heard_from(self, plan_id: str) -> None:
        """Note the plan's driver as alive; let go of the plans whose drivers went silent
        (``PLAN_SILENT_S``)."""
        now = self.clock()
        with self._done_ready:
            self._heard[plan_id] = now
            silent = [p for p, at in self._heard.items() if now - at > PLAN_SILENT_S]
        for plan in silent:
            self.forget(plan)

    def _run_and_finish(self, plan_id: str, spec: TrialSpec, plan: Plan, key: str) -> None:
        try:
            ended: WorkerOutput | Crashed = self._run(plan_id, spec, plan, key)
        except Exception as exc:  # a bug of ours around the trial: the driver retries it
            ended = Crashed(f"{type(exc).__name__}: {exc}")
        finally:
            self._end()
        self._finish(plan_id, key, ended)

    async def _run_async(self, plan_id: str, spec: TrialSpec, plan: Plan, key: str) -> None:
        import ray

        node_id = ray.get_runtime_context().get_node_id()
        runner = plan.trial_runner
        assert runner is not None
        try:
            result = runner(spec, plan.ctx, node_id)
            assert inspect.isawaitable(result)
            result = await result
            ended: WorkerOutput | Crashed = self._kept(plan_id, plan, key, result, None,
                                                       node_id)
        except Exception as exc:
            ended = Crashed(f"{type(exc).__name__}: {exc}")
        finally:
            self._end()
        self._finish(plan_id, key, ended)

    def _trial_threads(self) -> ThreadPoolExecutor:
        with self._running_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="trial")
            return self._pool

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        with self._running_lock:
            if self._loop is None:
                loop = self._loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="trial-loop",
                                 daemon=True).start()
            return self._loop

    def _run(self, plan_id: str, spec: TrialSpec, plan: Plan, attempt_key: str) -> WorkerOutput:
        import ray

        from pipeline.models.client import model_call_guard

        ctx, gates = plan.ctx, plan.gates
        node_id = ray.get_runtime_context().get_node_id()
        # Injected faults are reproducible per (trial, attempt).
        gate = CallGate(self.worker_id, gates.limiters, gates.faults,
                        rng=random.Random(attempt_key), rates=gates.rates, board=gates.board)
        endpoint = gates.endpoints.params_for(spec.model.name, node_id)
        if endpoint is None:  # its node service is not running here (the node joined later)
            return WorkerOutput(harness_failure(spec, ctx, f"no {spec.model.name} endpoint on "
                                                f"node {node_id}", node_id))
        if endpoint:
            spec = replace(spec, extra={**spec.extra, **endpoint})
        with model_call_guard(gate):
            try:
                ran = (plan.trial_runner or _run_trial)(spec, ctx, node_id)
                assert isinstance(ran, TrialResult), "a coroutine body runs on the event loop"
                result = ran
            except Exception as exc:  # a harness bug: recorded as such, never as the agent's
                result = harness_failure(spec, ctx, f"{type(exc).__name__}: {exc}", node_id)
        return self._kept(plan_id, plan, attempt_key, result, gate.retry_after_s, node_id)

    def _kept(self, plan_id: str, plan: Plan, attempt_key: str, result: TrialResult,
              retry_after_s: float | None, node_id: str) -> WorkerOutput:
        """The output of a finished attempt: its outcome if this worker keeps its rows for a
        part (a final attempt, where the warehouse is reachable), else its rows."""
        if plan.parts is None or not plan.parts.writes_on(node_id) or is_retryable(result):
            return WorkerOutput(result, retry_after_s)
        buffer = self._buffer(plan_id, plan.parts)
        outcome = buffer.add(result, int(attempt_key.rsplit(":", 1)[1]))
        flushed = off_loop(buffer.take) if buffer.due() else buffer.take()  # a part's write
        return WorkerOutput(None, retry_after_s, outcome, flushed)

    def _buffer(self, plan_id: str, config: PartsConfig) -> PartBuffer:
        with self._running_lock:
            buffer = self._buffers.get(plan_id)
            if buffer is None:
                buffer = self._buffers[plan_id] = PartBuffer(config)
        with self._done_ready:
            self._heard.setdefault(plan_id, self.clock())
        return buffer

    def flush(self, plan_id: str) -> Flushed:
        """Write whatever this worker holds of the run; the parts not yet reported."""
        self._heard_from(plan_id)
        with self._running_lock:
            buffer = self._buffers.get(plan_id)
        return Flushed() if buffer is None else buffer.take(force=True)

    def forget(self, plan_id: str) -> None:
        """The run is over: let go of its buffer (and of attempts nobody will poll for)."""
        with self._running_lock:
            self._buffers.pop(plan_id, None)
        with self._done_ready:
            self._done.pop(plan_id, None)
            self._heard.pop(plan_id, None)

    def preload(self) -> bool:
        """Import LiteLLM now, before the first trial needs it; whether it is imported."""
        from pipeline.models.client import litellm_module

        litellm_module()
        return "litellm" in sys.modules

    def pid(self) -> int:
        return os.getpid()


def _run_trial(spec: TrialSpec, ctx: RunContext, node_id: str) -> TrialResult:
    return run_trial(spec, ctx, node_id=node_id)


def _is_async(runner: Any) -> bool:
    """A coroutine function, or an object whose ``__call__`` is one."""
    return runner is not None and (inspect.iscoroutinefunction(runner) or
                                   inspect.iscoroutinefunction(vars(type(runner)).get("__call__")))
