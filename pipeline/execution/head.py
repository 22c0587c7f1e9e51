"""Whether the Ray head still answers: a driver that lost it stops in seconds.

Without a head (its GCS), Ray keeps the driver waiting and ends the process after 60 s with one
raw log line; trials that had already answered would be lost with it. The executor asks
``HeadWatch.check`` about once a second and before it reads a Ray error as a worker's death:
a GCS port that refuses connections for ``lost_after_s`` is a lost head (``RayHeadLost``), and
the sweep writes what finished and stops with the resume command.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from pipeline.runtime.probe import port_answers


class RayHeadLost(RuntimeError):
    """The Ray head stopped answering mid-sweep: finished trials are written, those in flight
    run again on resume."""

    def __init__(self, address: str) -> None:
        super().__init__(f"the Ray head at {address} stopped answering")
        self.address = address


class HeadWatch:
    """Probes the head's GCS port at most every ``probe_every_s`` (``address`` None: no probe)."""

    def __init__(self, address: str | None, probe_every_s: float = 1.0,
                 lost_after_s: float = 2.0,
                 answers: Callable[[str], bool] = port_answers,
                 now: Callable[[], float] = time.monotonic) -> None:
        self.address = address
        self.probe_every_s = probe_every_s
        self.lost_after_s = lost_after_s
        self._answers = answers
        self._now = now
        self._last_probe = now()
        self._silent_since: float | None = None
        self.lost = False

    def check(self) -> None:
        """A due probe; raises RayHeadLost once the head has been silent ``lost_after_s``."""
        if self.address is None or self._now() - self._last_probe < self.probe_every_s:
            return
        self._probe()

    def confirm(self, sleep: Callable[[float], None] = time.sleep) -> None:
        """Probe now, and again until the head answers or has been silent long enough (a Ray
        error is read as a worker's death only while the head still answers)."""
        if self.address is None:
            return
        self._probe()
        while self._silent_since is not None:
            sleep(self.probe_every_s / 2)
            self._probe()

    def _probe(self) -> None:
        assert self.address is not None
        now = self._now()
        self._last_probe = now
        if self._answers(self.address):
            self._silent_since = None
            return
        if self._silent_since is None:
            self._silent_since = now
        if now - self._silent_since >= self.lost_after_s:
            self.lost = True
            raise RayHeadLost(self.address)


def head_address(ray: object) -> str | None:
    """The GCS address of the connected Ray (None if it cannot be told)."""
    context = getattr(ray, "get_runtime_context", None)
    address = getattr(context(), "gcs_address", None) if context is not None else None
    return address if isinstance(address, str) and ":" in address else None
