"""A circuit breaker per provider group: a provider that keeps failing is paused, not hammered.

When ``threshold`` attempts in a row of one provider group fail as infrastructure (connection,
timeout, 5xx, 429 after its Retry-After...), the breaker opens: the executor starts no new
trial for that group and holds its retries. After a backoff it lets one attempt through (a
probe); a probe that succeeds closes the breaker and every held trial goes on, one that fails
doubles the backoff (up to ``probe_max_s``). Attempts that fail while a provider is known to be
down do not use up a trial's retry budget; the outage itself is bounded by ``max_outage_s``.
Pure bookkeeping: the clock is injectable.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

Say = Callable[[str], None]


@dataclass
class _Group:
    failures: int = 0
    down_since: float | None = None
    down_since_wall: datetime | None = None
    next_probe: float = 0.0
    backoff_s: float = 0.0
    probing: bool = False


@dataclass(frozen=True)
class Outage:
    group: str
    since: datetime
    until: datetime | None

    def describe(self) -> str:
        start = f"{self.since:%H:%M:%S}"
        if self.until is None:
            return f"provider {self.group} down since {start} UTC, paused"
        seconds = (self.until - self.since).total_seconds()
        return f"provider {self.group} was down {start}-{self.until:%H:%M:%S} UTC ({seconds:.0f} s)"


@dataclass
class Breaker:
    threshold: int = 3
    probe_base_s: float = 1.0
    probe_max_s: float = 15.0
    max_outage_s: float = 900.0
    clock: Callable[[], float] = time.monotonic
    on_change: Say = field(default=lambda _: None)
    outages: list[Outage] = field(default_factory=list)
    _groups: dict[str, _Group] = field(default_factory=dict)

    def _group(self, name: str) -> _Group:
        return self._groups.setdefault(name, _Group())

    def down(self, name: str) -> bool:
        return self._group(name).down_since is not None

    def outage_too_long(self, name: str) -> bool:
        since = self._group(name).down_since
        return since is not None and self.clock() - since > self.max_outage_s

    def allows(self, name: str) -> bool:
        """May an attempt of this group start now? While down: one probe when it is due."""
        group = self._group(name)
        if group.down_since is None or self.outage_too_long(name):
            return True  # up, or down for longer than it is worth waiting: budgets apply again
        if group.probing or self.clock() < group.next_probe:
            return False
        group.probing = True
        return True

    def seconds_to_probe(self) -> float | None:
        """Until the earliest probe of a down group is due (0 if overdue); None if none is."""
        due = [g.next_probe for g in self._groups.values()
               if g.down_since is not None and not g.probing]
        return None if not due else max(0.0, min(due) - self.clock())

    def record(self, name: str, infra_failed: bool | None) -> None:
        """A finished attempt of the group: its outcome moves the breaker. ``None``: it says
        nothing about the provider (a harness error, a lost worker); it only ends a probe, and
        the next one is due at once."""
        group = self._group(name)
        was_probe, group.probing = group.probing, False
        if infra_failed is None:
            if was_probe:
                group.next_probe = self.clock()
            return
        if not infra_failed:
            group.failures = 0
            if group.down_since is not None:
                self._close(name, group)
            return
        group.failures += 1
        if group.down_since is None and group.failures >= self.threshold:
            self._open(name, group)
        elif group.down_since is not None and was_probe:
            group.backoff_s = min(self.probe_max_s, group.backoff_s * 2)
            group.next_probe = self.clock() + group.backoff_s

    def _open(self, name: str, group: _Group) -> None:
        group.down_since = self.clock()
        group.down_since_wall = datetime.now(UTC)
        group.backoff_s = self.probe_base_s
        group.next_probe = self.clock() + group.backoff_s
        self.outages.append(Outage(name, group.down_since_wall, None))
        self.on_change(self.outages[-1].describe())

    def _close(self, name: str, group: _Group) -> None:
        assert group.down_since_wall is not None
        for index, outage in enumerate(self.outages):
            if outage.group == name and outage.until is None:
                self.outages[index] = Outage(name, outage.since, datetime.now(UTC))
                self.on_change(self.outages[index].describe() + "; resumed")
        group.down_since = group.down_since_wall = None
        group.failures = 0


_by_run: dict[str, list[Outage]] = {}


def keep_outages(run_id: str, outages: list[Outage]) -> None:
    """Remember a run's outages for its summary (in this process)."""
    _by_run[run_id] = outages


def outages_of(run_id: str) -> list[Outage]:
    return list(_by_run.get(run_id, []))
