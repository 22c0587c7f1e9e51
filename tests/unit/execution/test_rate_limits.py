"""Requests and tokens per minute per provider group, and the group pause after a 429 or 529:
the pure accounting on a hand-moved clock, and the worker's gate around a model call."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from pipeline.errors import InfraError
from pipeline.execution import group_pause
from pipeline.execution.concurrency import CallGate
from pipeline.execution.group_pause import (
    DEFAULT_PAUSE_S,
    MAX_PAUSE_S,
    PauseBook,
    ProcessPauses,
    pause_s,
)
from pipeline.execution.rate_limits import Buckets, RateLimits, RateRef, rates_from
from pipeline.models.config import ModelConfig


class Hand:
    """A clock moved by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_rpm_lets_one_call_a_second_through_at_60_rpm() -> None:
    clock = Hand()
    buckets = Buckets(RateLimits(rpm=60), clock)
    assert buckets.wait_s() == 0
    buckets.take(0)
    assert buckets.wait_s() == pytest.approx(1.0)
    clock.now += 0.5
    assert buckets.wait_s() == pytest.approx(0.5)
    clock.now += 0.5
    assert buckets.wait_s() == 0


def test_tpm_counts_the_estimate_and_the_reported_usage_corrects_it() -> None:
    clock = Hand()
    buckets = Buckets(RateLimits(tpm=600), clock)  # 10 tokens a second, 10 of burst
    buckets.take(50)  # estimate: a call larger than the bucket goes through, in debt
    assert buckets.wait_s() == pytest.approx(5.0)
    buckets.correct(20 - 50)  # the provider counted 20
    assert buckets.wait_s() == pytest.approx(2.0)
    buckets.correct(+30)  # or 30 more than counted
    assert buckets.wait_s() == pytest.approx(5.0)
    clock.now += 5.0
    assert buckets.wait_s() == 0


def test_idle_time_saves_up_one_second_at_most() -> None:
    clock = Hand()
    buckets = Buckets(RateLimits(tpm=600), clock)
    clock.now += 3600
    buckets.take(10)
    assert buckets.wait_s() == 0
    buckets.take(10)
    assert buckets.wait_s() == pytest.approx(1.0)


@pytest.mark.parametrize(("estimate", "reported"), [(40, 37), (300, 120), (10, 90)])
def test_a_greedy_caller_gets_the_limit_over_two_minutes(estimate: int, reported: int) -> None:
    """Calls as fast as the buckets allow, each corrected after it: tokens used over 120 s are
    the limit's two minutes' worth, within one second's burst and one call."""
    clock = Hand()
    tpm = 6000
    buckets = Buckets(RateLimits(rpm=10_000, tpm=tpm), clock)
    start, used = clock.now, 0
    while True:
        wait = buckets.wait_s()
        if clock.now + wait >= start + 120:
            break
        clock.now += wait
        buckets.take(estimate)
        buckets.correct(reported - estimate)
        used += reported
    limit = tpm * 2
    assert limit * 0.97 <= used <= limit + max(estimate, reported)


def test_a_pause_holds_every_call_until_it_ends_and_a_shorter_one_does_not_cut_it() -> None:
    clock = Hand()
    buckets = Buckets(RateLimits(rpm=6000), clock)
    buckets.pause(2.0)
    assert buckets.wait_s() == pytest.approx(2.0)
    buckets.pause(0.5)
    assert buckets.wait_s() == pytest.approx(2.0)
    clock.now += 2.0
    assert buckets.wait_s() == 0


def test_rates_come_from_the_models_per_provider_group() -> None:
    models = [ModelConfig("openai/a", rpm=100, tpm=5000), ModelConfig("openai/b", tpm=4000),
              ModelConfig("anthropic/c"), ModelConfig("gemini/d", rpm=7)]
    assert rates_from(models) == {"openai": RateLimits(100, 4000),
                                    "gemini": RateLimits(rpm=7)}
    assert rates_from([]) == {}
    assert not RateLimits()


# --- the group pause -----------------------------------------------------------------------

def test_which_failures_pause_their_group_and_for_how_long() -> None:
    assert pause_s("rate_limit", 2.5) == 2.5  # a 429's Retry-After
    assert pause_s("overloaded", None) == DEFAULT_PAUSE_S  # a 529 without one
    assert pause_s("rate_limit", 7200) == MAX_PAUSE_S
    assert pause_s("server_error", 3.0) is None
    assert pause_s("timeout", None) is None
    assert pause_s(None, None) is None


def test_the_pause_book_pauses_one_group() -> None:
    clock = Hand()
    book = PauseBook(clock)
    assert book.seconds_to_resume() is None
    book.pause("openai", 1.5)
    book.pause("openai", 0.2)  # a shorter pause does not cut the longer one
    assert book.paused("openai") and not book.paused("anthropic")
    assert book.seconds_to_resume() == pytest.approx(1.5)
    clock.now += 1.5
    assert not book.paused("openai") and book.seconds_to_resume() is None
    assert book.pauses == 2


class _Remote:
    """A Ray actor method as the gate calls it: ``.remote(*args)`` is recorded."""

    def __init__(self, name: str, calls: list[tuple[str, tuple[Any, ...]]]) -> None:
        self.name = name
        self.calls = calls

    def remote(self, *args: Any) -> tuple[str, tuple[Any, ...]]:
        self.calls.append((self.name, args))
        return (self.name, args)


class _Handle:
    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.acquire = _Remote("acquire", self.calls)
        self.correct = _Remote("correct", self.calls)
        self.pause = _Remote("pause", self.calls)


@pytest.fixture
def pauses(monkeypatch: pytest.MonkeyPatch) -> ProcessPauses:
    fresh = ProcessPauses()
    monkeypatch.setattr(group_pause, "GROUP_PAUSES", fresh)
    monkeypatch.setattr("pipeline.execution.concurrency.GROUP_PAUSES", fresh)
    return fresh


def test_the_gate_counts_the_estimate_then_the_reported_tokens(pauses: ProcessPauses) -> None:
    handle = _Handle()
    gate = CallGate("w", rates={"openai": RateRef("rate:x", handle)}, get=lambda ref: None)
    with gate("openai/gpt-4o-mini", lambda: 100) as report:
        assert report is not None
    report(120)
    with gate("openai/gpt-4o-mini", lambda: 100) as report:
        assert report is not None
    report(None)  # no usage reported: the estimate stands
    with gate("anthropic/claude", lambda: 100) as other:  # a group without rates
        assert other is None
    assert handle.calls == [("acquire", (100,)), ("correct", (20,)), ("acquire", (100,))]


def test_a_429_pauses_the_group_for_every_trial_of_the_process(pauses: ProcessPauses) -> None:
    handle = _Handle()
    rates = {"openai": RateRef("rate:x", handle)}
    refused = CallGate("w", rates=rates, get=lambda ref: None)
    with pytest.raises(InfraError), refused("openai/a", lambda: 1):
        raise InfraError("rate_limit", "429", retry_after_s=0.6)
    assert ("pause", (0.6,)) in handle.calls  # the whole cluster's calls of the group wait
    assert refused.retry_after_s == 0.6

    waited: dict[str, float] = {}
    paused_left: dict[str, float] = {}

    def call(model: str) -> None:  # another trial of the same worker process
        started = time.monotonic()
        with CallGate("w", get=lambda ref: None)(model, lambda: 1):
            waited[model] = time.monotonic() - started
            paused_left[model] = pauses.seconds_left("openai")

    threads = [threading.Thread(target=call, args=(m,)) for m in ("openai/b", "anthropic/c")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert waited["openai/b"] >= 0.5  # paused with its group
    assert paused_left["anthropic/c"] > 0  # another group goes on while that one waits


def test_a_529_without_retry_after_pauses_for_the_default(pauses: ProcessPauses) -> None:
    gate = CallGate("w")
    with pytest.raises(InfraError), gate("anthropic/a", lambda: 1):
        raise InfraError("overloaded", "529")
    with pytest.raises(InfraError), gate("openai/a", lambda: 1):
        raise InfraError("server_error", "500")  # a 500 pauses nothing
    assert pauses.seconds_left("anthropic") == pytest.approx(DEFAULT_PAUSE_S, abs=0.1)
    assert pauses.seconds_left("openai") == 0


def test_the_limiter_wakes_a_waiting_call_when_a_correction_frees_tokens() -> None:
    """The actor's own methods on one event loop (as Ray runs them), without Ray."""
    import asyncio

    from pipeline.execution.rate_limits import RateLimiter

    async def scenario() -> float:
        limiter = RateLimiter("t", rpm=None, tpm=600)  # 10 tokens a second
        await limiter.acquire(50)  # an estimate: 5 s of debt
        waiting = asyncio.ensure_future(limiter.acquire(10))
        await asyncio.sleep(0.1)
        assert not waiting.done()
        started = time.monotonic()
        await limiter.correct(-50)  # the call used none: the debt is paid
        await asyncio.wait_for(waiting, 2.0)
        stats = await limiter.stats()
        assert stats["granted"] == 2 and stats["tokens"] == 10
        return time.monotonic() - started

    assert asyncio.run(scenario()) < 0.5


def test_a_pause_reaches_every_worker_process_through_the_board() -> None:
    """Two processes' pauses (as two ProcessPauses) follow one board (the actor's own methods
    on an event loop, as Ray runs them): a 429 in one pauses the group in the other."""
    import asyncio

    from pipeline.execution.group_pause import BoardRef, PauseBoard, follow

    loop = asyncio.new_event_loop()
    runner = threading.Thread(target=loop.run_forever, daemon=True)
    runner.start()
    board = PauseBoard()

    class Method:
        def __init__(self, name: str) -> None:
            self.name = name

        def remote(self, *args: Any) -> Any:
            return asyncio.run_coroutine_threadsafe(getattr(board, self.name)(*args), loop)

    class Handle:
        pause, left = Method("pause"), Method("left")

    ref = BoardRef("pause:test", Handle())
    get = lambda future, timeout=None: future.result(timeout)  # noqa: E731 (ray.get's shape)
    other = ProcessPauses()
    follow(ref, get, other, interval_s=0.02)
    follow(ref, get, other, interval_s=0.02)  # once per board and process
    try:
        assert other.seconds_left("openai") == 0
        ref.handle.pause.remote("openai", 5.0).result(10)  # a 429 seen by the first process
        deadline = time.monotonic() + 3
        while other.seconds_left("openai") == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert 1.5 < other.seconds_left("openai") <= 5.0
        assert other.seconds_left("anthropic") == 0
    finally:
        loop.call_soon_threadsafe(loop.stop)
