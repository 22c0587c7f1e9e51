"""Synchronous trial code run as a coroutine: each trial in a greenlet of the event loop's
thread, which hands the loop whatever the trial waits for.

A trial is ordinary blocking code (the agent's loop, its model calls, the user simulator, the
sandbox, the scoring). Run in a thread each, hundreds of trials in flight are hundreds of
threads taking turns at one interpreter lock: CPU per model call grows with their number
(docs/performance.md). ``run_as_coroutine(fn, ...)`` runs ``fn`` in a greenlet instead, on the
thread of the running event loop; where the code would block it calls ``wait_for(awaitable)``:
the greenlet switches back to the coroutine, which awaits it while the loop runs the other
trials, and switches in again with its result (or its exception). Only the waits that call
``wait_for`` (``in_coroutine()`` says when to) yield to the others: a model call's HTTP
exchange (pipeline.models.loop_http), a pause, a wait on Ray; any other blocking call still
blocks the loop, and its trials wait their turn (slower, never wrong).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import greenlet

T = TypeVar("T")


class _TrialGreenlet(greenlet.greenlet):  # type: ignore[misc]
    """A greenlet running trial code: ``wait_for`` switches back to its coroutine."""


async def run_as_coroutine(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a greenlet of this thread, its ``wait_for`` calls awaited here."""
    glet = _TrialGreenlet(fn)
    waited: Any = glet.switch(*args)
    while not glet.dead:
        try:
            value = await waited
        except BaseException as exc:  # the trial's code sees it where it waited  # noqa: BLE001
            waited = glet.throw(exc)
        else:
            waited = glet.switch(value)
    result: T = waited
    return result


def in_coroutine() -> bool:
    """Whether this code runs in a trial coroutine (``run_as_coroutine``)."""
    return isinstance(greenlet.getcurrent(), _TrialGreenlet)


def wait_for(awaitable: Awaitable[T]) -> T:
    """The awaitable's result, awaited by the trial's coroutine while the event loop runs the
    others. Only in a trial coroutine."""
    current = greenlet.getcurrent()
    if not isinstance(current, _TrialGreenlet):
        raise RuntimeError("wait_for is for code run by run_as_coroutine")
    result: T = current.parent.switch(awaitable)
    return result


BLOCKING_THREADS = 1024
"""Threads at most for blocking work handed off by trial coroutines (made as needed): one per
such call in flight, so a call that waits long (a provider's answer) holds up no other."""
_blocking: ThreadPoolExecutor | None = None
_blocking_lock = threading.Lock()


def off_loop(fn: Callable[[], T]) -> T:
    """``fn()``, in a thread of its own when called in a trial coroutine (work that blocks: a
    part's encoding and write, a model call LiteLLM sends itself), so the loop's other trials
    go on meanwhile; else right here."""
    if not in_coroutine():
        return fn()
    global _blocking
    with _blocking_lock:
        if _blocking is None:
            _blocking = ThreadPoolExecutor(BLOCKING_THREADS, thread_name_prefix="blocking")
    return wait_for(asyncio.get_running_loop().run_in_executor(_blocking, fn))


def wait_on_ray(ref: Any, get: Callable[[Any], Any]) -> Any:
    """A Ray object's value: awaited in a trial coroutine (no thread held), else ``get``."""
    if in_coroutine():
        return wait_for(asyncio.wrap_future(ref.future()))
    return get(ref)


def pause(seconds: float) -> None:
    """``time.sleep`` that lets the other trial coroutines run meanwhile."""
    if in_coroutine():
        wait_for(asyncio.sleep(seconds))
    else:
        time.sleep(seconds)
