"""Time as the executor sees it: the real clock, or a scaled one for drills.

Retry backoffs, the breaker's probes and how long an outage is waited out are all measured on
the executor's clock (``ExecuteOptions.clock``). ``Clock(speed=30)`` runs those 30 times faster
than the wall: a 30 s outage drill then takes about a second, while every decision the
executor makes is the one it makes in real time. Model calls keep their real time limits.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Clock:
    speed: float = 1.0
    """Clock seconds per wall second (1: real time)."""
    origin: float = field(default_factory=time.monotonic)

    def now(self) -> float:
        """Seconds on this clock (monotonic)."""
        return self.origin + (time.monotonic() - self.origin) * self.speed

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of this clock."""
        time.sleep(max(0.0, seconds) / self.speed)

    def wall(self, seconds: float | None) -> float | None:
        """``seconds`` of this clock in wall seconds (None stays None: no limit)."""
        return None if seconds is None else max(0.0, seconds) / self.speed

    def simulated(self, wall_s: float) -> float:
        """``wall_s`` wall seconds in seconds of this clock."""
        return wall_s * self.speed


REAL_TIME = Clock()
"""The wall clock: what every sweep a user runs uses."""
