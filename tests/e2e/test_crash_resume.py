"""The driver is killed with SIGKILL mid-sweep; `agentsweep run --resume` completes the grid.

Runs `agentsweep run` as a user would, in a fresh process with its own AGENTSWEEP_HOME, as a
driver of the session's Ray cluster and a client of the session's Prefect server (the cluster
and the orchestrator outlive the killed driver, as in production; and no start-up is paid
twice). The sweep spec slows every model call (in-process injected latency) and writes small
batches, so the first batch file lands long before the grid is done.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import descendants
from helpers.slow_grid import GRID, driver_env, slow_grid_spec

from warehouse.query import run_sql

BIN = Path(sys.executable).parent
def _kill_all(pids: set[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.slow
def test_sigkill_mid_sweep_then_resume_completes_the_grid_once(
        ray_local: Any, prefect_harness: None, tmp_path: Path) -> None:
    home = tmp_path / "home"
    spec = slow_grid_spec(tmp_path, latency_ms=40, extra="batch_size: 8\n")
    command = [str(BIN / "agentsweep"), "run", "--spec", str(spec), "--run-id", "crash"]
    batches = home / "warehouse" / "trials" / "run_id=crash"
    env = driver_env(home, RAY_ADDRESS=str(ray_local.get_runtime_context().gcs_address))
    driver = subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, start_new_session=True)
    spawned: set[int] = set()
    try:
        deadline = time.monotonic() + 300  # a hang guard: a loaded machine starts slowly
        while not list(batches.glob("*.parquet")) and time.monotonic() < deadline:
            assert driver.poll() is None, driver.communicate()[0].decode()
            spawned |= set(descendants(driver.pid))
            time.sleep(0.05)
        spawned |= set(descendants(driver.pid))
        assert driver.poll() is None, "the sweep finished before it could be killed"
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=10)
    finally:
        _kill_all(spawned | {driver.pid})  # anything it left behind
        if driver.stdout is not None:
            driver.stdout.close()
    root = home / "warehouse"
    written = run_sql(root, "select count(*) from trials_all").rows[0][0]
    assert 0 < written < GRID
    assert run_sql(root, "select count(*) from runs where finished_at is not null").rows == [
        (0,)]  # it never finished (only its start row is there)

    resumed = subprocess.run([*command, "--resume"], env=env, capture_output=True,
                             text=True, timeout=150, check=False)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"skipped {written} (already final)" in resumed.stdout
    assert run_sql(root, "select count(*), count(distinct trial_id), bool_and(passed) "
                         "from trials where run_id = 'crash'").rows == [(GRID, GRID, True)]
    assert run_sql(root, "select count(*) from trials_all").rows == [(GRID,)]
    # every final row has its attempt recorded; numbering never repeats within a trial
    assert run_sql(root, "select count(*) from trials t semi join attempts a "
                         "using (run_id, trial_id, attempt_id)").rows == [(GRID,)]
    assert run_sql(root, "select count(*) from (select trial_id, attempt from attempts "
                         "group by all having count(*) > 1)").rows == [(0,)]
