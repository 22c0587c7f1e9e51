"""Retry bookkeeping, the concurrency limiter and the progress counts, without Ray."""

from __future__ import annotations

import asyncio
import concurrent.futures
import random
import threading
import time
from dataclasses import replace
from typing import Any

import pytest
from conftest import MEETING_SUITE

from pipeline.catalog import load_suites
from pipeline.errors import AgentError, InfraError
from pipeline.execution.attempts import RetryBook
from pipeline.execution.concurrency import (
    CallGate,
    ConcurrencyLimiter,
    PermitPool,
    limit_key,
    limits_from,
)
from pipeline.execution.retry import RetryPolicy
from pipeline.models.faults import FaultProfile
from pipeline.sweep.grid import ModelConfig, TrialSpec, expand
from pipeline.sweep.progress import SweepProgress, progress_enabled
from pipeline.trial.run import RunContext, TrialResult, harness_failure
from warehouse.schema import TrialStatus

CANARY = "sk-canary-attempts-0123456789abcdef"


@pytest.fixture(scope="module")
def spec() -> TrialSpec:
    suites = load_suites([MEETING_SUITE])
    return next(expand(suites, [ModelConfig("reference/golden")], ["default"], ["chat"], 1))


def _result(spec: TrialSpec, status: TrialStatus, error_kind: str | None = None,
            message: str | None = None) -> TrialResult:
    row = harness_failure(spec, RunContext("r", "test"), "").trial
    return TrialResult(replace(row, attempt_id="a", status=status, error_kind=error_kind,
                               error_message=message))


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_infra_failures_retry_until_max_attempts_then_stay_incomplete(spec: TrialSpec) -> None:
    clock = Clock()
    book = RetryBook(RetryPolicy(max_attempts=3, backoff_base_s=1, backoff_max_s=8),
                     rng=random.Random(1), clock=clock)
    number = book.first_attempt(spec)
    for kind in ("rate_limit", "harness_error"):
        attempt = book.settle(spec, number, _result(spec, "incomplete", kind))
        assert not attempt.final and attempt.retry_delay_s is not None
        assert book.pop_due() is None  # not before its backoff
        clock.now += attempt.retry_delay_s
        due = book.pop_due()
        assert due == (spec, number + 1)
        number = due[1]
    last = book.settle(spec, number, _result(spec, "incomplete", "timeout"))
    assert (last.number, last.final, last.retry_delay_s) == (3, True, None)
    assert book.waiting == 0


@pytest.mark.parametrize("status,kind", [("complete", None), ("agent_error", "empty_response"),
                                         ("limit", "step_limit")])
def test_agent_outcomes_are_never_retried(spec: TrialSpec, status: str, kind: str | None) -> None:
    book = RetryBook(RetryPolicy(max_attempts=5))
    attempt = book.settle(spec, 1, _result(spec, status, kind))
    assert attempt.final and book.waiting == 0


def test_a_final_trial_is_forgotten_after_its_free_retries(spec: TrialSpec) -> None:
    book = RetryBook(RetryPolicy(max_attempts=2, backoff_base_s=0.01))
    for number in (1, 2, 3):  # its provider down: free retries, past the budget of 2
        assert not book.settle(spec, number, _result(spec, "incomplete", "connection"),
                               free=True).final
    assert book.tracked == 1
    assert book.settle(spec, 4, _result(spec, "complete")).final
    assert book.tracked == 0  # the book does not grow with the trials that ran
    book.again(spec, 5, _result(spec, "incomplete", "harness_error"))
    book.forget(spec.trial_id)  # committed in a part a worker wrote
    assert book.tracked == 0


def test_retry_after_is_honoured_and_resume_continues_numbering(spec: TrialSpec) -> None:
    book = RetryBook(RetryPolicy(max_attempts=2, backoff_base_s=0.01, backoff_max_s=5),
                     prior={spec.trial_id: 4}, rng=random.Random(0))
    number = book.first_attempt(spec)
    assert number == 5  # attempts 1-4 were recorded by an earlier invocation
    attempt = book.settle(spec, number, _result(spec, "incomplete", "rate_limit"), 2.5)
    assert not attempt.final  # a resume gets a fresh budget of max_attempts
    assert attempt.retry_delay_s is not None and attempt.retry_delay_s >= 2.5
    assert book.settle(spec, 6, _result(spec, "incomplete", "rate_limit")).final


def test_attempt_row_is_redacted(spec: TrialSpec, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACME_API_KEY", CANARY)
    book = RetryBook(RetryPolicy(max_attempts=1))
    result = _result(spec, "incomplete", "connection", f"refused; key={CANARY}")
    row = book.settle(spec, 1, result).row().as_dict()
    assert CANARY not in str(row)
    assert (row["attempt"], row["outcome"], row["error_kind"]) == (1, "incomplete", "connection")


def test_limiter_holds_its_limit_and_reclaims_a_dead_holder() -> None:
    async def scenario() -> dict[str, int]:
        limiter = ConcurrencyLimiter("t", 2)
        await limiter.acquire("a")
        await limiter.acquire("dead")
        waiting = [asyncio.create_task(limiter.acquire(h)) for h in ("b", "c")]
        await asyncio.sleep(0)
        assert not any(t.done() for t in waiting)
        assert await limiter.release_holder("dead") == 1  # its worker died holding a permit
        await asyncio.sleep(0)
        assert waiting[0].done() and not waiting[1].done()
        await limiter.release("a")
        await limiter.release("ghost")  # unknown holder: no double free
        await asyncio.gather(*waiting)
        return await limiter.stats()

    stats = asyncio.run(scenario())
    assert stats == {"limit": 2, "in_use": 2, "waiting": 0, "max_in_use": 2, "granted": 4}


class _Method:
    def __init__(self, fn: Any) -> None:
        self.remote = fn


class _FakeLimiter:
    """The actor's contract with a blocking semaphore: acquire.remote -> ref, get(ref) waits."""

    def __init__(self, limit: int) -> None:
        self.semaphore = threading.BoundedSemaphore(limit)
        self.acquire = _Method(lambda holder: self.semaphore)
        self.release = _Method(lambda holder: self.semaphore.release())


def test_permit_pools_share_the_global_limit_with_few_round_trips() -> None:
    limiter = _FakeLimiter(3)
    pools = [PermitPool(limiter, f"worker-{i}", lambda ref: ref.acquire()) for i in range(2)]
    lock = threading.Lock()
    open_now = [0, 0]  # calls open now, most ever

    def calls(pool: PermitPool) -> None:
        for _ in range(30):
            pool.acquire()
            with lock:
                open_now[0] += 1
                open_now[1] = max(open_now[1], open_now[0])
            time.sleep(0.002)
            with lock:
                open_now[0] -= 1
            pool.release()

    threads = [threading.Thread(target=calls, args=(pools[i % 2],)) for i in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert open_now[1] == 3  # never more than the limit across both "processes"
    assert sum(p.round_trips for p in pools) < 360 / 4  # most permits changed hands locally
    time.sleep(0.3)  # idle permits linger 50 ms, then go back to the limiter
    assert sum(p.leased for p in pools) == 0
    assert all(limiter.semaphore.acquire(blocking=False) for _ in range(3))


class _Lease:
    """A limiter's answer as a Ray ref: ``future()`` done once the permit is granted."""

    def __init__(self, semaphore: threading.BoundedSemaphore) -> None:
        self.semaphore = semaphore

    def acquire(self) -> bool:  # what get(ref) does, for threads
        return self.semaphore.acquire()

    def future(self) -> concurrent.futures.Future[bool]:
        granted: concurrent.futures.Future[bool] = concurrent.futures.Future()
        threading.Thread(target=lambda: granted.set_result(self.semaphore.acquire()),
                         daemon=True).start()
        return granted


def test_trial_coroutines_wait_for_permits_on_their_loop_not_on_its_thread() -> None:
    """Trials run as coroutines (pipeline.runtime.as_coroutine) share one thread: a trial
    waiting for a permit must let the loop run the trial that will release one."""
    from pipeline.runtime.as_coroutine import pause, run_as_coroutine

    limiter = _FakeLimiter(3)
    limiter.acquire = _Method(lambda holder: _Lease(limiter.semaphore))
    pool = PermitPool(limiter, "worker-0", lambda ref: ref.acquire())
    open_now = [0, 0]

    def trial() -> None:
        for _ in range(10):
            pool.acquire()
            open_now[0] += 1
            open_now[1] = max(open_now[1], open_now[0])
            pause(0.002)
            open_now[0] -= 1
            pool.release()

    async def trials() -> None:
        await asyncio.wait_for(asyncio.gather(*(run_as_coroutine(trial) for _ in range(50))),
                               timeout=60)

    asyncio.run(trials())
    assert open_now == [0, 3]  # 500 calls, never more than the limit at once
    assert pool.round_trips < 500 / 4  # permits passed from trial to trial in the process


def test_limits_come_from_model_settings_by_provider_group() -> None:
    from pipeline.models.config import ModelConfig

    limits = limits_from([ModelConfig("openai/a", concurrency=4), ModelConfig("openai/b"),
                          ModelConfig("reference/golden")])
    assert limits == {"openai": 4}
    assert limit_key("openai/b", limits) == "openai"
    assert limit_key("reference/golden", limits) is None
    assert limits_from([]) == {}  # no models: no limits


def test_gate_injects_faults_and_remembers_retry_after() -> None:
    gate = CallGate("t:1", faults={"reference/golden": FaultProfile(rate_limit=1.0,
                                                                    retry_after_s=0.7)})
    with pytest.raises(InfraError) as caught, gate("reference/golden"):
        pass
    assert caught.value.kind == "rate_limit" and gate.retry_after_s == 0.7
    with gate("openai/other"):  # no profile, no limiter: a no-op
        pass


@pytest.mark.parametrize(("profile", "kind"), [
    (FaultProfile(overloaded=1.0), "overloaded"),
    (FaultProfile(context_length=1.0), "context_limit")])
def test_gate_injects_an_overload_and_a_context_length_fault(profile: FaultProfile,
                                                              kind: str) -> None:
    """As the reference server answers them: an infrastructure overload, and the agent's
    context limit (never an infrastructure error)."""
    gate = CallGate("t:1", faults={"reference/golden": profile})
    with pytest.raises((InfraError, AgentError)) as caught, gate("reference/golden"):
        pass
    assert caught.value.kind == kind
    assert isinstance(caught.value, AgentError) == (kind == "context_limit")


def test_progress_counts_and_switch(spec: TrialSpec, monkeypatch: pytest.MonkeyPatch) -> None:
    book = RetryBook(RetryPolicy(max_attempts=2, backoff_base_s=0))
    progress = SweepProgress(1, enabled=False)
    with progress:
        progress.attempt(book.settle(spec, 1, _result(spec, "incomplete", "timeout")))
        assert (progress.done, progress.incomplete, progress.retrying) == (0, 0, 1)
        progress.attempt(book.settle(spec, 2, _result(spec, "incomplete", "timeout")))
    assert (progress.done, progress.incomplete, progress.retrying) == (1, 1, 0)
    assert (progress.passed, progress.failed, progress.not_passed) == (0, 0, 1)
    monkeypatch.setenv("AGENTSWEEP_PROGRESS", "0")
    assert not progress_enabled()


