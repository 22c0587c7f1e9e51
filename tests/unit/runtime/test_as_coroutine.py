"""Synchronous code run as coroutines (pipeline.runtime.as_coroutine): results and exceptions
cross the bridge both ways, the waits of many trials overlap on one thread, and the helpers
behave as their blocking selves outside a trial coroutine."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from pipeline.runtime.as_coroutine import (
    in_coroutine,
    off_loop,
    pause,
    run_as_coroutine,
    wait_for,
)


def test_results_and_exceptions_cross_both_ways() -> None:
    async def answer(value: int) -> int:
        await asyncio.sleep(0)
        return value * 2

    async def fail() -> None:
        raise KeyError("from the loop")

    def trial(value: int) -> tuple[int, str, bool]:
        doubled = wait_for(answer(value))
        try:
            wait_for(fail())
            caught = ""
        except KeyError as exc:  # raised where the trial waited
            caught = str(exc)
        return doubled, caught, in_coroutine()

    assert asyncio.run(run_as_coroutine(trial, 21)) == (42, "'from the loop'", True)

    def broken() -> None:
        wait_for(asyncio.sleep(0))
        raise ValueError("the trial's own")

    with pytest.raises(ValueError, match="the trial's own"):
        asyncio.run(run_as_coroutine(broken))


def test_the_waits_of_many_trials_overlap_on_one_thread() -> None:
    threads: set[int] = set()

    def trial(index: int) -> int:
        threads.add(threading.get_ident())
        for _ in range(3):
            pause(0.2)
        return index

    async def many() -> list[int]:
        return list(await asyncio.gather(*(run_as_coroutine(trial, i) for i in range(200))))

    started = time.monotonic()
    assert asyncio.run(many()) == list(range(200))
    assert time.monotonic() - started < 0.6 * 200 / 4  # 200 x 0.6 s one after another: 120 s
    assert threads == {threading.get_ident()}  # every trial on the loop's own thread


def test_blocking_work_goes_to_a_thread_and_the_loop_goes_on() -> None:
    ticks: list[float] = []

    async def ticking() -> None:
        for _ in range(5):
            ticks.append(time.monotonic())
            await asyncio.sleep(0.05)

    def trial() -> tuple[int, bool]:
        here = threading.get_ident()
        elsewhere = off_loop(lambda: (time.sleep(0.3), threading.get_ident())[1])
        return elsewhere, elsewhere != here

    async def both() -> tuple[int, bool]:
        _, result = await asyncio.gather(ticking(), run_as_coroutine(trial))
        return result

    _, moved = asyncio.run(both())
    assert moved and len(ticks) == 5 and ticks[-1] - ticks[0] < 0.3  # ticked while it slept


def test_outside_a_trial_coroutine_the_helpers_block_as_before() -> None:
    assert not in_coroutine()
    assert off_loop(lambda: threading.get_ident()) == threading.get_ident()
    started = time.monotonic()
    pause(0.05)
    assert time.monotonic() - started >= 0.05
    waiting = asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="run_as_coroutine"):
        wait_for(waiting)
    waiting.close()
