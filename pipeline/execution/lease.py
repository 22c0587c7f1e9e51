"""The run lock of a warehouse on object storage: a lease object, created conditionally.

A local ``flock`` (``pipeline.execution.runlock``) serialises the drivers of one machine only.
Drivers on several machines sharing a warehouse in a bucket take a lease instead:
``_leases/<run_id>.json`` under the warehouse prefix, created with ``If-None-Match: *`` (S3
creates it for exactly one of two racing drivers; the other gets 412 and is refused, naming the
holder). The holder renews it (a heartbeat every third of its time to live) with ``If-Match``
its own ETag, and deletes it when the run ends. A driver that dies stops renewing: once the
lease has expired, the next driver takes it over (again with ``If-Match``, so of two drivers
taking over only one wins) and says whose lease it took and since when it had expired.

A holder whose renewal finds the lease changed (it was paused past its time to live and another
driver took over) marks the lease ``lost``; so does one that could not renew it for a whole time
to live (the store unreachable: another driver may take it over by now). ``check`` then raises
``LeaseLost``; while the lease is held, every commit of the run's batches asks ``check`` first
(``warehouse.objectstore.commit_guard``), so a driver that lost its lease writes no more
visible rows. (S3 cannot make one PUT conditional on another object: a driver paused between
its check and its commit PUT may still land that one batch. Its rows are the same trials' rows
as the new holder's, and the views keep one row per trial.)
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from warehouse.location import S3Location
from warehouse.objectstore import (
    CommitConflict,
    commit_guard,
    delete_objects,
    get_object,
    list_objects,
    put_object,
)
from warehouse.store_retry import ObjectStoreUnavailable

LEASE_TTL = timedelta(seconds=60)
"""How long a lease lasts without a heartbeat (``AGENTSWEEP_LEASE_SECONDS``)."""
LEASES = "_leases"
log = logging.getLogger(__name__)


class LeaseHeld(RuntimeError):
    """Another live driver holds the run's lease."""


class LeaseLost(RuntimeError):
    """This driver's lease was taken over (it missed its heartbeats)."""


def lease_ttl() -> timedelta:
    raw = os.environ.get("AGENTSWEEP_LEASE_SECONDS", "").strip()
    if not raw:
        return LEASE_TTL
    try:
        seconds = float(raw)
    except ValueError:
        seconds = 0.0
    if not seconds > 0:
        raise ValueError(f"AGENTSWEEP_LEASE_SECONDS={raw!r}: give a number of seconds above 0")
    return timedelta(seconds=seconds)


def lease_key(run_id: str) -> str:
    """The lease of a whole run (one driver, or a resume of every shard)."""
    return f"{LEASES}/{run_id}.json"


def shard_leases(run_id: str) -> str:
    """Where the leases of a run's shards are (one per shard a driver runs)."""
    return f"{LEASES}/{run_id}/"


def shard_lease_key(run_id: str, label: str) -> str:
    """The lease of one shard of a run (``label``: ``1-of-2``)."""
    return f"{shard_leases(run_id)}shard-{label}.json"


@dataclass
class Lease:
    loc: S3Location
    run_id: str
    ttl: timedelta
    holder: dict[str, object]
    etag: str = ""
    took_over: str | None = None
    """Whose expired lease this driver took over (a sentence), or None."""
    lost: bool = False
    renewed: float = field(default_factory=time.monotonic)
    """When the lease was last written by this driver (monotonic seconds)."""
    _stop: threading.Event = field(default_factory=threading.Event)
    key: str = ""
    """The lease object (the run's, or one shard's); the run's when empty."""

    def __post_init__(self) -> None:
        self.key = self.key or lease_key(self.run_id)

    def body(self, now: datetime) -> bytes:
        return json.dumps({**self.holder, "expires": (now + self.ttl).isoformat()}).encode()

    def renew(self, now: datetime) -> None:
        """One heartbeat: the lease extended, if it is still this driver's."""
        try:
            self.etag = put_object(self.loc, self.key, self.body(now), if_match=self.etag)
            self.renewed = time.monotonic()
        except CommitConflict:
            self.lost = True
            log.error("the lease of run %s was taken over by another driver", self.run_id)

    def check(self) -> None:
        if time.monotonic() - self.renewed > self.ttl.total_seconds():
            self.lost = True  # not renewed for a whole time to live: no longer ours to trust
        if self.lost:
            raise LeaseLost(f"run {self.run_id}: another driver took over this run's lease "
                            "(this driver missed its heartbeats); stop, and resume later")


def describe(record: dict[str, object]) -> str:
    """Who holds a lease, for a person (its token stays out)."""
    return json.dumps({k: v for k, v in record.items() if k != "token"})


def _expired(record: dict[str, object], now: datetime) -> bool:
    """The holder is gone: its lease ran out, or it was a process of this machine that no
    longer runs (a driver stopped by an outage left its lease to expire: a resume here need
    not wait for that)."""
    try:
        if datetime.fromisoformat(str(record["expires"])) <= now:
            return True
    except (KeyError, ValueError):  # unreadable: treat it as a dead driver's
        return True
    return record.get("host") == socket.gethostname() and not _running(record.get("pid"))


def _running(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def holder_of_lease(loc: S3Location, run_id: str,
                    now: Callable[[], datetime] = lambda: datetime.now(UTC),
                    key: str | None = None) -> str | None:
    """Who holds the run's lease (or the lease ``key``) now (None: nobody, or it expired);
    takes nothing."""
    found = get_object(loc, key or lease_key(run_id))
    if found is None:
        return None
    record = json.loads(found[0])
    return None if _not_held(record, now()) else describe(record)


def _not_held(record: dict[str, object], now: datetime) -> bool:
    """The lease is nobody's (expired, its driver gone) or this very process's."""
    return _expired(record, now) or (record.get("pid") == os.getpid()
                                     and record.get("host") == socket.gethostname())


def live_shard_leases(loc: S3Location, run_id: str,
                      now: Callable[[], datetime] = lambda: datetime.now(UTC)
                      ) -> dict[str, str]:
    """The run's shards other drivers hold now: shard label (``1-of-2``) -> its holder."""
    under = shard_leases(run_id)
    live = {}
    for key, _ in list_objects(loc, under):
        name = key.removeprefix(under)
        if not (name.startswith("shard-") and name.endswith(".json")):
            continue
        found = get_object(loc, key)
        if found is not None and not _not_held(record := json.loads(found[0]), now()):
            live[name.removeprefix("shard-").removesuffix(".json")] = describe(record)
    return live


def acquire(loc: S3Location, run_id: str, ttl: timedelta,
            now: Callable[[], datetime] = lambda: datetime.now(UTC),
            key: str | None = None) -> Lease:
    """The run's lease (or the lease ``key``: a shard's), created or taken over from a dead
    driver; LeaseHeld when live."""
    holder: dict[str, object] = {
        "pid": os.getpid(), "host": socket.gethostname(),
        "since": now().strftime("%Y-%m-%dT%H:%M:%SZ"), "token": uuid.uuid4().hex}
    lease = Lease(loc, run_id, ttl, holder, key=key or lease_key(run_id))
    key = lease.key
    for _ in range(3):  # the lease may vanish between a refused create and its read
        try:
            lease.etag = put_object(loc, key, lease.body(now()), if_none_match=True)
            return lease
        except CommitConflict:
            pass
        found = get_object(loc, key)
        if found is None:
            continue
        record, etag = json.loads(found[0]), found[1]
        if not _expired(record, now()):
            raise LeaseHeld(describe(record))
        try:
            lease.etag = put_object(loc, key, lease.body(now()), if_match=etag)
        except CommitConflict:  # another driver took it over first
            continue
        what = "" if key == lease_key(run_id) else f" ({key.rsplit('/', 1)[-1]})"
        lease.took_over = (f"took over the expired lease of run {run_id}{what} held by "
                           f"{describe(record)} (expired {record.get('expires')})")
        return lease
    raise LeaseHeld(f"the lease {loc}/{key} keeps changing; another driver is taking it")


def _heartbeat(lease: Lease, now: Callable[[], datetime]) -> None:
    while not lease._stop.wait(lease.ttl.total_seconds() / 3) and not lease.lost:
        try:
            lease.renew(now())
        except Exception as exc:  # the store unreachable for a moment: try again next beat
            log.info("run %s: the lease could not be renewed (%s); trying again",
                     lease.run_id, type(exc).__name__)


def release(lease: Lease) -> None:
    """The lease given back (removed), if it is still this driver's; with the store away it
    is left to expire."""
    try:
        found = get_object(lease.loc, lease.key)
        if found is not None and json.loads(found[0]).get("token") == lease.holder["token"]:
            delete_objects(lease.loc, [lease.key])
    except ObjectStoreUnavailable as exc:
        log.info("run %s: the lease was left to expire: %s", lease.run_id, exc)


@contextmanager
def run_lease(loc: S3Location, run_id: str, ttl: timedelta | None = None,
              now: Callable[[], datetime] = lambda: datetime.now(UTC),
              key: str | None = None) -> Iterator[Lease]:
    """The run's lease (or the lease ``key``: a shard's) held, with a heartbeat, for the
    block."""
    lease = acquire(loc, run_id, ttl or lease_ttl(), now, key)
    if lease.took_over:
        log.warning("%s", lease.took_over)
    unguard = commit_guard(loc, run_id, lease.check)
    beat = threading.Thread(target=_heartbeat, args=(lease, now), daemon=True,
                            name=f"lease-{run_id}")
    beat.start()
    try:
        yield lease
    finally:
        unguard()
        lease._stop.set()
        beat.join()
        if not lease.lost:
            release(lease)
