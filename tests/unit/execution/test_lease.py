"""The run lease on object storage (pipeline.execution.lease) against a real S3 API on loopback:
a conditional create lets one of two racing drivers in, a heartbeat keeps it, a dead driver's
expired lease is taken over with a message that names it, a driver whose lease was taken knows."""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest

from pipeline.execution.lease import (
    LeaseHeld,
    LeaseLost,
    acquire,
    holder_of_lease,
    lease_key,
    run_lease,
    shard_lease_key,
)
from pipeline.execution.runlock import RunLocked, holder_of_run, refusal, run_guard
from pipeline.execution.shards import Shard
from warehouse.location import S3Location
from warehouse.objectstore import get_object, put_object

RUN = "r1"


def test_a_second_driver_of_the_same_run_is_refused_and_told_who(
        s3_warehouse: S3Location) -> None:
    with run_guard(RUN, s3_warehouse):
        assert holder_of_run(RUN, s3_warehouse) is None  # its own lease does not refuse it
        with pytest.raises(LeaseHeld) as refused:
            acquire(s3_warehouse, RUN, timedelta(seconds=30))
        assert json.loads(str(refused.value))["pid"] > 0
        assert "token" not in str(refused.value)
    assert get_object(s3_warehouse, lease_key(RUN)) is None  # given back at the end
    with run_guard(RUN, s3_warehouse):  # and free for the next driver
        pass


def test_run_guard_refuses_with_the_run_lock_message(s3_warehouse: S3Location) -> None:
    lease = acquire(s3_warehouse, RUN, timedelta(seconds=30))
    lease.holder.update(pid=4242, host="another-machine")  # as if a driver there held it
    lease.renew(datetime.now(UTC))
    assert holder_of_run(RUN, s3_warehouse) is not None
    with pytest.raises(RunLocked, match="already being run by"), run_guard(RUN, s3_warehouse):
        pass


def test_a_live_lease_of_a_dead_driver_of_this_machine_is_taken_over(
        s3_warehouse: S3Location) -> None:
    """A driver stopped by an outage leaves its lease to expire; a resume on the same machine
    need not wait for that: the holder's process is gone."""
    import subprocess
    import sys

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    lease = acquire(s3_warehouse, RUN, timedelta(seconds=300))
    lease.holder["pid"] = int(gone.stdout)
    lease.renew(datetime.now(UTC))
    assert holder_of_run(RUN, s3_warehouse) is None
    assert acquire(s3_warehouse, RUN, timedelta(seconds=30)).took_over


def test_of_drivers_racing_for_one_run_id_exactly_one_wins(s3_warehouse: S3Location) -> None:
    start = threading.Barrier(6)
    won: list[str] = []
    refused: list[str] = []

    def driver() -> None:
        start.wait()
        try:
            acquire(s3_warehouse, RUN, timedelta(seconds=30))
            won.append("won")
        except LeaseHeld as exc:
            refused.append(str(exc))

    threads = [threading.Thread(target=driver) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(won) == 1 and len(refused) == 5


def test_an_expired_lease_of_a_dead_driver_is_taken_over_with_a_message(
        s3_warehouse: S3Location) -> None:
    dead = {"pid": 4242, "host": "gone-node", "since": "2026-12-01T00:00:00Z", "token": "x",
            "expires": (datetime.now(UTC) - timedelta(seconds=5)).isoformat()}
    put_object(s3_warehouse, lease_key(RUN), json.dumps(dead).encode())
    assert holder_of_lease(s3_warehouse, RUN) is None  # expired: nobody runs it
    with run_lease(s3_warehouse, RUN, timedelta(seconds=30)) as lease:
        assert lease.took_over is not None
        assert "gone-node" in lease.took_over and "4242" in lease.took_over
        assert "expired" in lease.took_over


def test_the_heartbeat_keeps_a_lease_past_its_time_to_live(s3_warehouse: S3Location) -> None:
    with run_lease(s3_warehouse, RUN, timedelta(seconds=0.9)) as lease:
        time.sleep(2.0)
        with pytest.raises(LeaseHeld):
            acquire(s3_warehouse, RUN, timedelta(seconds=30))
        assert not lease.lost


def test_a_driver_whose_lease_was_taken_over_knows(s3_warehouse: S3Location) -> None:
    late = datetime.now(UTC) + timedelta(minutes=5)
    lease = acquire(s3_warehouse, RUN, timedelta(seconds=30))
    other = acquire(s3_warehouse, RUN, timedelta(seconds=30), now=lambda: late)  # after expiry
    assert other.took_over is not None
    lease.renew(datetime.now(UTC))
    assert lease.lost
    with pytest.raises(LeaseLost, match="took over"):
        lease.check()


def test_a_driver_that_lost_its_lease_commits_no_more_batches(s3_warehouse: S3Location) -> None:
    from unit.warehouse.test_compact import _batch

    from warehouse.objectstore import committed_parts, uncommitted
    from warehouse.writer import WarehouseWriter

    late = datetime.now(UTC) + timedelta(minutes=5)
    with run_lease(s3_warehouse, "r1", timedelta(seconds=30)) as lease:
        out = WarehouseWriter(s3_warehouse, "r1")
        out.write_batch(_batch(0, 1))  # held: committed
        acquire(s3_warehouse, "r1", timedelta(seconds=30), now=lambda: late)  # taken over
        lease.renew(datetime.now(UTC))
        with pytest.raises(LeaseLost):
            out.write_batch(_batch(1, 1))
    assert len(committed_parts(s3_warehouse)["trials"]) == 1
    assert uncommitted(s3_warehouse) == []  # the refused batch's parts went with it


def test_a_lease_not_renewed_for_its_time_to_live_is_not_trusted(
        s3_warehouse: S3Location, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.execution import lease as lease_module

    def unreachable(*args: object, **kwargs: object) -> str:
        raise ConnectionError("the store is unreachable")

    with run_lease(s3_warehouse, RUN, timedelta(seconds=0.6)) as lease:
        monkeypatch.setattr(lease_module, "put_object", unreachable)
        time.sleep(1.0)  # heartbeats fail (and are retried), the time to live passes
        with pytest.raises(LeaseLost):
            lease.check()
        monkeypatch.undo()


def _held_elsewhere(loc: S3Location, key: str | None = None) -> None:
    """A lease (the run's, or ``key``) as a live driver on another machine holds it."""
    lease = acquire(loc, RUN, timedelta(seconds=60), key=key)
    lease.holder.update(pid=4242, host="another-machine")
    lease.renew(datetime.now(UTC))


def test_shards_of_a_run_hold_leases_of_their_own_in_the_bucket(
        s3_warehouse: S3Location) -> None:
    one, two = Shard(index=1, count=2), Shard(index=2, count=2)
    _held_elsewhere(s3_warehouse, shard_lease_key(RUN, one.label))
    assert holder_of_run(RUN, s3_warehouse) is not None  # the run is live
    assert refusal(RUN, s3_warehouse, shard=two) is None
    with run_guard(RUN, s3_warehouse, shard=two):  # another shard: runs beside it
        assert get_object(s3_warehouse, shard_lease_key(RUN, two.label)) is not None
        assert get_object(s3_warehouse, lease_key(RUN)) is None  # the whole run's stays free
    assert get_object(s3_warehouse, shard_lease_key(RUN, two.label)) is None  # given back
    with pytest.raises(RunLocked, match="--shard 1/2: shard 1/2 of run r1 is already being "
                       "run by .*another-machine"), run_guard(RUN, s3_warehouse, shard=one):
        pass
    with pytest.raises(RunLocked, match=r"shards of this run are being run \(shard 1/2 by .*"
                       r"another-machine.*--resume --shard 2/2"), run_guard(RUN, s3_warehouse):
        pass
    assert get_object(s3_warehouse, lease_key(RUN)) is None  # the refused driver's, given back
    with pytest.raises(RunLocked, match="--shard 2/3: run r1 is being run in 2 shards"
                       ), run_guard(RUN, s3_warehouse, shard=Shard(index=2, count=3)):
        pass
    assert get_object(s3_warehouse, shard_lease_key(RUN, "2-of-3")) is None


def test_a_shard_is_refused_while_a_driver_holds_the_whole_run(
        s3_warehouse: S3Location) -> None:
    _held_elsewhere(s3_warehouse)
    shard = Shard(index=1, count=2)
    assert "already being run by" in (refusal(RUN, s3_warehouse, shard=shard) or "")
    with pytest.raises(RunLocked, match="already being run by .*another-machine"), run_guard(
            RUN, s3_warehouse, shard=shard):
        pass
    assert get_object(s3_warehouse, shard_lease_key(RUN, shard.label)) is None
