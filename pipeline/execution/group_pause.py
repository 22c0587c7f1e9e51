"""A provider group paused after a 429 or 529: every trial of the group waits, not only the
one that was refused.

A provider that answers 429 (rate limited) or 529/503 (overloaded) says "not now" to the whole
account, not to one dialog. So its ``Retry-After`` (``DEFAULT_PAUSE_S`` when it sent none)
pauses the group:

- in the worker process that saw it (``GROUP_PAUSES``: every trial thread of the process waits
  before its next call of the group);
- in every other worker process of the cluster within ``POLL_S``: the run's ``PauseBoard`` (a
  Ray actor) is told, and each worker process polls it (``follow``: one round trip per
  ``POLL_S`` and process, none per call);
- at the group's rate limiter when it has one (pipeline.execution.rate_limits: every call
  granted there waits);
- on the driver (``PauseBook``: no new attempt of the group starts until then; the executor
  holds them like trials of a group that is down).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pipeline.errors import InfraError
from pipeline.runtime.as_coroutine import pause

PAUSING_KINDS = frozenset({"rate_limit", "overloaded"})
"""Infrastructure error kinds that pause their provider group."""
DEFAULT_PAUSE_S = 1.0
"""How long a 429 or 529 without a Retry-After pauses its group."""
POLL_S = 0.25
"""How often a worker process reads the run's pause board."""
MAX_PAUSE_S = 60.0
"""The longest pause one answer can ask for (a Retry-After of an hour is an outage: the
circuit breaker and the retry policy deal with that)."""


def pause_s(kind: str | None, retry_after_s: float | None) -> float | None:
    """How long an attempt's failure pauses its group; None: it does not."""
    if kind not in PAUSING_KINDS:
        return None
    seconds = DEFAULT_PAUSE_S if retry_after_s is None else retry_after_s
    return min(MAX_PAUSE_S, max(0.0, seconds))


def pause_of(exc: InfraError) -> float | None:
    """How long this error pauses its group; None: it does not."""
    return pause_s(exc.kind, exc.retry_after_s)


@dataclass
class PauseBook:
    """Provider group -> until when it is paused, on an injectable clock."""

    clock: Callable[[], float] = time.monotonic
    _until: dict[str, float] = field(default_factory=dict)
    pauses: int = 0
    """Pauses set (a count for the run's summary and tests)."""

    def pause(self, group: str, seconds: float) -> None:
        until = self.clock() + seconds
        if until > self._until.get(group, 0.0):
            self._until[group] = until
        self.pauses += 1

    def seconds_left(self, group: str) -> float:
        """Until the group may start calls again (0: now)."""
        return max(0.0, self._until.get(group, 0.0) - self.clock())

    def paused(self, group: str) -> bool:
        return self.seconds_left(group) > 0

    def seconds_to_resume(self) -> float | None:
        """Until the earliest paused group resumes; None if none is paused."""
        left = [s for g in self._until if (s := self.seconds_left(g)) > 0]
        return min(left) if left else None


class ProcessPauses:
    """A worker process's pauses, shared by its trials (a trial coroutine waits out a pause on
    its event loop: ``as_coroutine.pause``)."""

    def __init__(self, sleep: Callable[[float], None] = pause) -> None:
        self._book = PauseBook()
        self._lock = threading.Lock()
        self._sleep = sleep

    def pause(self, group: str, seconds: float) -> None:
        with self._lock:
            self._book.pause(group, seconds)

    def seconds_left(self, group: str) -> float:
        with self._lock:
            return self._book.seconds_left(group)

    def wait(self, group: str) -> None:
        """Return once the group is not paused (at once when it is not)."""
        while True:
            with self._lock:
                left = self._book.seconds_left(group)
            if left <= 0:
                return
            self._sleep(left)


GROUP_PAUSES = ProcessPauses()
"""This process's pauses (one per worker process)."""


class PauseBoard:
    """The run's pauses for the whole cluster, as a Ray actor: worker processes tell it of a
    429 or 529 and read it every ``POLL_S``."""

    def __init__(self) -> None:
        self._book = PauseBook()

    async def pause(self, group: str, seconds: float) -> None:
        self._book.pause(group, seconds)

    async def left(self) -> dict[str, float]:
        """Paused group -> seconds left."""
        return {g: s for g in list(self._book._until) if (s := self._book.seconds_left(g)) > 0}


@dataclass(frozen=True)
class BoardRef:
    """The run's pause board as workers see it: its unique name and handle."""

    name: str
    handle: Any


def create_board(ray: Any, run_id: str, namespace: str) -> BoardRef:
    """The run's pause board; owned by the driver, killed when ``execute`` ends."""
    name = f"pause:{run_id}:{uuid.uuid4().hex[:8]}"
    handle = ray.remote(PauseBoard).options(name=name, namespace=namespace, num_cpus=0,
                                            max_concurrency=1000).remote()
    return BoardRef(name, handle)


_followed: set[str] = set()
_followed_lock = threading.Lock()


def follow(board: BoardRef, get: Callable[..., Any], pauses: ProcessPauses | None = None,
           interval_s: float = POLL_S) -> None:
    """Copy the board's pauses into this process's, every ``interval_s``, in a daemon thread
    (one per board and process); it ends when the board is gone (its run ended)."""
    with _followed_lock:
        if board.name in _followed:
            return
        _followed.add(board.name)
    thread = threading.Thread(target=_poll, args=(board, get, pauses, interval_s), daemon=True,
                              name="pause-board")
    thread.start()


def _poll(board: BoardRef, get: Callable[..., Any], pauses: ProcessPauses | None,
          interval_s: float) -> None:
    try:
        while True:
            left: dict[str, float] = get(board.handle.left.remote(), timeout=10)
            for group, seconds in left.items():
                (pauses or GROUP_PAUSES).pause(group, seconds)
            time.sleep(interval_s)
    except Exception:  # the board is gone (the run ended, Ray shut down): stop following it
        with _followed_lock:
            _followed.discard(board.name)
