"""The run lock: who holds a run id (or a shard of it), as preflight asks before the driver
takes it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from pipeline.execution.runlock import (
    RunLocked,
    holder_of,
    local_refusal,
    lock_path,
    run_lock,
)
from pipeline.execution.shards import Shard

HOLD = """
import sys, time
from pathlib import Path
from pipeline.execution.runlock import run_lock
with run_lock("busy", Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(60)
"""


def test_nobody_holds_a_run_that_never_ran_or_finished(tmp_path: Path) -> None:
    assert holder_of("busy", tmp_path) is None
    with run_lock("busy", tmp_path):
        pass
    assert lock_path("busy", tmp_path).is_file() and holder_of("busy", tmp_path) is None


def test_the_driver_holding_the_lock_is_not_refused_by_its_own_check(tmp_path: Path) -> None:
    with run_lock("busy", tmp_path):
        assert holder_of("busy", tmp_path) is None


def test_another_process_holding_the_lock_is_named(tmp_path: Path) -> None:
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        named = holder_of("busy", tmp_path)
        assert named is not None and json.loads(named)["pid"] == holder.pid
        with pytest.raises(RunLocked, match="already being run by"), run_lock("busy", tmp_path):
            pass
    finally:
        holder.kill()
        holder.wait()
    time.sleep(0.1)
    assert holder_of("busy", tmp_path) is None  # a killed holder's lock goes with it


HOLD_SHARD = """
import sys, time
from pathlib import Path
from pipeline.execution.runlock import run_lock
from pipeline.execution.shards import Shard
shard = Shard.model_validate(sys.argv[2]) if sys.argv[2] != "-" else None
with run_lock("busy", Path(sys.argv[1]), shard):
    print("held", flush=True)
    time.sleep(60)
"""


@contextmanager
def held(home: Path, shard: str) -> Iterator[int]:
    """Another process holding the run "busy" (``shard``: that shard; ``-``: the whole run)."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD_SHARD, str(home), shard],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        yield holder.pid
    finally:
        holder.kill()
        holder.wait()


def test_the_shards_of_a_run_are_held_by_their_drivers_side_by_side(tmp_path: Path) -> None:
    one, two = Shard(index=1, count=2), Shard(index=2, count=2)
    with held(tmp_path, "1/2") as pid:
        assert str(pid) in (holder_of("busy", tmp_path) or "")  # the run is live
        assert local_refusal("busy", tmp_path, two) is None
        with run_lock("busy", tmp_path, two):  # another shard: runs beside it
            pass
        with pytest.raises(RunLocked, match=r"--shard 1/2: shard 1/2 of run busy is already "
                           rf"being run by .*{pid}"), run_lock("busy", tmp_path, one):
            pass
        # the whole run (a plain --resume) waits for its shards, and is told which is free
        with pytest.raises(RunLocked, match=r"shards of this run are being run \(shard 1/2 by "
                           r".*\); wait for them to end; resume a shard no driver runs with "
                           r"--resume --shard 2/2"), run_lock("busy", tmp_path):
            pass
        # another count would run trials of shard 1/2 again
        with pytest.raises(RunLocked, match=r"--shard 1/3: run busy is being run in 2 shards"
                           ), run_lock("busy", tmp_path, Shard(index=1, count=3)):
            pass
        assert "being run in 2 shards" in (local_refusal(
            "busy", tmp_path, Shard(index=2, count=3)) or "")
    time.sleep(0.1)
    assert holder_of("busy", tmp_path) is None  # a killed shard's lock goes with it
    with run_lock("busy", tmp_path):  # and the whole run is free again
        pass


def test_a_shard_waits_for_a_driver_of_the_whole_run(tmp_path: Path) -> None:
    with held(tmp_path, "-") as pid:
        said = local_refusal("busy", tmp_path, Shard(index=1, count=2))
        assert said is not None and "already being run by" in said and str(pid) in said
        with pytest.raises(RunLocked, match="already being run by"), run_lock(
                "busy", tmp_path, Shard(index=2, count=2)):
            pass
