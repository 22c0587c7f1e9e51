"""Who may run a run id now: a lock held for as long as a driver runs the run, or its shard.

``AGENTSWEEP_HOME/locks/<run_id>.lock`` is locked with ``flock`` by the driver that runs the
run (a crashed driver's lock goes with its process); its content says who holds it. A second
start of the same run id, fresh or ``--resume``, is refused and names the holder. The lock is
per machine (the home's file system): drivers on several machines sharing one warehouse on
object storage are serialised by a lease in the bucket instead (``pipeline.execution.lease``);
``run_guard`` and ``holder_of_run`` pick the one that fits the warehouse.

A run split into shards (``--shard I/N``, ``pipeline.execution.shards``) is run by several
drivers at once, each holding its shard: the run's lock shared plus
``locks/<run_id>.shards/<I>-of-<N>.lock`` exclusive; on object storage a lease per shard
(``_leases/<run_id>/shard-<I>-of-<N>.json``) beside the run's. A driver of the whole run (an
unsharded run, a ``--resume`` of every shard, compaction) needs the run alone: it is refused
while any shard's driver lives, and a shard's driver while the whole run is held. Two shard
counts never run at once (their slices overlap).
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO

from pipeline.execution.lease import (
    LeaseHeld,
    holder_of_lease,
    live_shard_leases,
    run_lease,
    shard_lease_key,
)
from pipeline.execution.shards import Shard, from_label
from pipeline.runtime.hygiene import agentsweep_home
from warehouse.location import Root, S3Location


class RunLocked(RuntimeError):
    """The run id (or this shard of it) is being run by another driver."""


def locked_message(run_id: str, holder: str) -> str:
    return (f"--run-id {run_id}: this run is already being run by {holder}; wait for it, or "
            "choose another --run-id")


def shards_message(run_id: str, live: dict[Shard, str]) -> str:
    """The whole run refused while shards of it run: who runs which, and what is free."""
    held = "; ".join(f"shard {shard} by {holder}" for shard, holder in sorted(
        live.items(), key=lambda item: (item[0].count, item[0].index)))
    counts = {shard.count for shard in live}
    free = [f"{i}/{n}" for n in sorted(counts) for i in range(1, n + 1)
            if Shard(index=i, count=n) not in live]
    hint = (f"; resume a shard no driver runs with --resume --shard {free[0]}" if free
            and len(counts) == 1 else "")
    return (f"--run-id {run_id}: shards of this run are being run ({held}); wait for them to "
            f"end{hint}")


def shard_message(run_id: str, shard: Shard, holder: str) -> str:
    return (f"--shard {shard}: shard {shard} of run {run_id} is already being run by "
            f"{holder}; wait for it, or give another --shard")


def count_message(run_id: str, shard: Shard, live: dict[Shard, str]) -> str | None:
    """A shard refused because the run is being run in another number of shards, or None."""
    other = {s: h for s, h in live.items() if s.count != shard.count}
    if not other:
        return None
    first, holder = min(other.items(), key=lambda item: (item[0].count, item[0].index))
    return (f"--shard {shard}: run {run_id} is being run in {first.count} shards (shard "
            f"{first} by {holder}); give --shard I/{first.count}, the same count as every "
            "driver of the run")


def lock_path(run_id: str, home: Path | None = None) -> Path:
    return (home or agentsweep_home()) / "locks" / f"{run_id}.lock"


def shard_lock_path(run_id: str, shard: Shard, home: Path | None = None) -> Path:
    return lock_path(run_id, home).with_suffix(".shards") / f"{shard.label}.lock"


def _held_by_other(path: Path) -> str | None:
    """Who else holds the lock file now (None: nobody, or this process); takes nothing."""
    if not path.is_file():
        return None
    with path.open("r") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = handle.read().strip()
            return None if _is_this_process(holder) else holder or "another process"
    return None


def live_shards(run_id: str, home: Path | None = None) -> dict[Shard, str]:
    """The run's shards other processes of this machine hold now, with their holders."""
    folder = lock_path(run_id, home).with_suffix(".shards")
    live = {}
    for path in sorted(folder.glob("*.lock")) if folder.is_dir() else []:
        shard = from_label(path.stem)
        holder = _held_by_other(path) if shard is not None else None
        if shard is not None and holder is not None:
            live[shard] = holder
    return live


def holder_of(run_id: str, home: Path | None = None) -> str | None:
    """Who else runs the run, or a shard of it, on this machine now (None: nobody, or this
    process); takes nothing."""
    live = live_shards(run_id, home)
    return next(iter(live.values())) if live else _held_by_other(lock_path(run_id, home))


def local_refusal(run_id: str, home: Path | None = None, shard: Shard | None = None
                  ) -> str | None:
    """Why another process of this machine keeps this driver from the run (or from
    ``shard`` of it) now, as a sentence (None: nothing does); takes nothing."""
    whole = _held_by_other(lock_path(run_id, home))
    live = live_shards(run_id, home)
    if shard is None:
        if live:
            return shards_message(run_id, live)
        return None if whole is None else locked_message(run_id, whole)
    if shard in live:
        return shard_message(run_id, shard, live[shard])
    if whole is not None and not live:  # a driver of the whole run (shards hold it shared)
        return locked_message(run_id, whole)
    return count_message(run_id, shard, live)


def _is_this_process(holder: str) -> bool:
    try:
        record = json.loads(holder)
    except ValueError:
        return False
    return isinstance(record, dict) and record.get("pid") == os.getpid()


def _holder_record() -> str:
    return json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                       "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})


def _flocked(stack: ExitStack, path: Path, mode: int) -> IO[str] | None:
    """``path`` opened and flocked in ``mode`` without waiting (closed with the stack), or
    None when another process holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = stack.enter_context(path.open("a+"))
    try:
        fcntl.flock(handle, mode | fcntl.LOCK_NB)
    except BlockingIOError:
        return None
    return handle


def _write_holder(handle: IO[str]) -> None:
    handle.seek(0)
    handle.truncate()
    handle.write(_holder_record())
    handle.flush()


@contextmanager
def run_lock(run_id: str, home: Path | None = None, shard: Shard | None = None
             ) -> Iterator[None]:
    """The run held by this process for the block (``shard``: that shard of it); RunLocked
    naming who holds what it needs."""
    with ExitStack() as stack:
        if shard is None:
            handle = _flocked(stack, lock_path(run_id, home), fcntl.LOCK_EX)
            if handle is None:
                raise RunLocked(local_refusal(run_id, home) or locked_message(
                    run_id, "another process"))
            _write_holder(handle)
        else:
            _lock_shard(stack, run_id, shard, home)
        yield  # closing the files releases the locks


def _lock_shard(stack: ExitStack, run_id: str, shard: Shard, home: Path | None) -> None:
    if _flocked(stack, lock_path(run_id, home), fcntl.LOCK_SH) is None:
        whole = _held_by_other(lock_path(run_id, home)) or "another process"
        raise RunLocked(locked_message(run_id, whole))
    handle = _flocked(stack, shard_lock_path(run_id, shard, home), fcntl.LOCK_EX)
    if handle is None:
        raise RunLocked(local_refusal(run_id, home, shard) or shard_message(
            run_id, shard, "another process"))
    _write_holder(handle)
    # Taken first, then looked for: of two drivers of different counts starting at once,
    # each finds the other's lock held (both are refused, never both run).
    clash = count_message(run_id, shard, live_shards(run_id, home))
    if clash is not None:
        raise RunLocked(clash)


@contextmanager
def run_guard(run_id: str, warehouse: Root, home: Path | None = None,
              shard: Shard | None = None) -> Iterator[None]:
    """The run's lock (or ``shard``'s) for the block: the machine's lock files for a warehouse
    in a folder, the bucket's leases for one on object storage (RunLocked either way when
    another driver holds what it needs; an expired lease of a dead driver is taken over, and
    the takeover logged)."""
    if not isinstance(warehouse, S3Location):
        with run_lock(run_id, home, shard):
            yield
        return
    with ExitStack() as stack:
        key = None if shard is None else shard_lease_key(run_id, shard.label)
        try:
            lease = stack.enter_context(run_lease(warehouse, run_id, key=key))
        except LeaseHeld as exc:
            message = (locked_message(run_id, str(exc)) if shard is None
                       else shard_message(run_id, shard, str(exc)))
            raise RunLocked(message) from None
        # Taken first, then looked for: of a whole-run driver and a shard's starting at once
        # each finds the other's lease (both are refused, never both run).
        clash = _lease_clash(warehouse, run_id, shard)
        if clash is not None:
            raise RunLocked(clash)  # leaving the stack gives the lease back
        yield
        lease.check()  # a run whose lease was taken over mid-way does not end as if whole


def _lease_clash(loc: S3Location, run_id: str, shard: Shard | None) -> str | None:
    """What else holds the run on object storage against this driver's lease, or None."""
    live = {s: h for label, h in live_shard_leases(loc, run_id).items()
            if (s := from_label(label)) is not None}
    if shard is None:
        return shards_message(run_id, live) if live else None
    whole = holder_of_lease(loc, run_id)
    if whole is not None:
        return locked_message(run_id, whole)
    return count_message(run_id, shard, live)


def refusal(run_id: str, warehouse: Root, home: Path | None = None,
            shard: Shard | None = None) -> str | None:
    """Why another driver keeps this one from the run (or its ``shard``) now, by the locks
    that fit the warehouse, as a sentence (None: nothing does); takes nothing."""
    if not isinstance(warehouse, S3Location):
        return local_refusal(run_id, home, shard)
    if shard is not None:
        own = holder_of_lease(warehouse, run_id, key=shard_lease_key(run_id, shard.label))
        if own is not None:
            return shard_message(run_id, shard, own)
    whole = holder_of_lease(warehouse, run_id)
    return locked_message(run_id, whole) if whole is not None else _lease_clash(
        warehouse, run_id, shard)


def holder_of_run(run_id: str, warehouse: Root, home: Path | None = None) -> str | None:
    """Who else runs the run, or a shard of it, now, by the locks that fit the warehouse
    (takes nothing)."""
    if not isinstance(warehouse, S3Location):
        return holder_of(run_id, home)
    live = live_shard_leases(warehouse, run_id)
    return next(iter(live.values())) if live else holder_of_lease(warehouse, run_id)
