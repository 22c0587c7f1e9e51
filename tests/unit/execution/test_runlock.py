"""The run lock: who holds a run id, as preflight asks before the driver takes it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.execution.runlock import RunLocked, holder_of, lock_path, run_lock

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
