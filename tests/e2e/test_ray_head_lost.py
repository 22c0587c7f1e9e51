"""The Ray head dies mid-sweep: finished trials are in the warehouse, the run ends in seconds
with one line, exit 3 and the resume command, and the resume completes the grid once.

`agentsweep run` in a fresh process starts its own local Ray (in a temp folder of its own);
the test kills that Ray's GCS server and raylet with SIGKILL while trials run. Without the
head watch, Ray would hold the driver 60 s and end it with a raw log line, and every trial
that had answered since the last batch (60 s, 500 trials) would be lost.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import descendants
from helpers.slow_grid import GRID, driver_env, slow_grid_spec

from warehouse.query import run_sql

BIN = Path(sys.executable).parent
def _head_processes(driver: int) -> list[int]:
    """The GCS server and raylet of the driver's own Ray."""
    found = []
    for pid in descendants(driver):
        try:
            name = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
        if name in ("gcs_server", "raylet"):
            found.append(pid)
    return found


def _trials(root: Path, run_id: str) -> tuple[int, int, int, datetime | None]:
    rows = run_sql(root, "select count(*), count(distinct trial_id), "
                         "count(*) filter (where status <> 'incomplete'), max(finished_at) "
                         f"from trials where run_id = '{run_id}'").rows
    count, distinct, final, latest = rows[0]
    return int(count), int(distinct), int(final), latest


@pytest.mark.slow
def test_a_lost_ray_head_keeps_finished_trials_and_ends_with_the_resume_command(
        prefect_harness: None, tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = home / "warehouse"
    spec = slow_grid_spec(tmp_path, latency_ms=400)
    ray_dir = tempfile.mkdtemp(prefix="as-head-", dir="/tmp")  # Ray's socket paths stay short
    env = driver_env(home, RAY_TMPDIR=ray_dir)
    batches = root / "trials" / "run_id=headless"
    driver = subprocess.Popen([str(BIN / "agentsweep"), "run", "--spec", str(spec), "--run-id",
                               "headless"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 300  # a hang guard: a loaded machine starts slowly
        while not list(batches.glob("*.parquet")) and time.monotonic() < deadline:
            assert driver.poll() is None, driver.communicate()
            time.sleep(0.1)
        assert list(batches.glob("*.parquet")), "no trial was written within 300 s"
        time.sleep(6)  # trials go on finishing; the next write is due
        head = _head_processes(driver.pid)
        assert len(head) == 2, head
        killed_at = datetime.now(UTC)
        for pid in head:
            os.kill(pid, signal.SIGKILL)
        # Ray alone would hold the driver 60 s; the head watch ends it in seconds
        out, err = driver.communicate(timeout=45)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait()
    assert driver.returncode == 3, (out, err)
    errors = [line for line in err.splitlines() if line.strip()]
    assert len(errors) == 1, err
    assert errors[0].startswith("error: stopped: the Ray head at 127.0.0.1:")
    assert "every finished one is saved" in errors[0]
    assert errors[0].endswith("then: agentsweep run --run-id headless --resume")
    assert "Traceback" not in out + err
    count, distinct, final, latest = _trials(root, "headless")
    assert 0 < count == distinct == final < GRID
    assert latest is not None
    # every trial that had answered a while before the kill was written (not 60 s of them lost)
    assert (killed_at - latest).total_seconds() < 5, (killed_at, latest)

    resumed = subprocess.run([str(BIN / "agentsweep"), "run", "--run-id", "headless",
                              "--resume"], env=env, capture_output=True, text=True,
                             timeout=240, check=False)
    assert resumed.returncode == 0, (resumed.stdout, resumed.stderr)
    assert _trials(root, "headless")[:3] == (GRID, GRID, GRID)
    shutil.rmtree(ray_dir, ignore_errors=True)
