"""One run, several drivers: ``agentsweep run --shard I/N`` processes share a run id and a
warehouse (and the session's Ray cluster and Prefect server, as jobs of one night would), each
running its slice of one grid under its own lock; a driver killed with SIGKILL mid-way leaves
its slice to ``--resume``, which is refused while another shard's driver still runs and, once
none does, runs every shard's unfinished trials: rows = distinct = complete = grid."""

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
from e2e.test_s3_warehouse import bucket as bucket  # the fixture: a fresh loopback bucket
from helpers.slow_grid import GRID, driver_env, slow_grid_spec

from pipeline.execution.lease import shard_lease_key
from warehouse.location import S3Location
from warehouse.objectstore import get_object, live_records
from warehouse.query import run_named, run_sql

BIN = Path(sys.executable).parent
RUN = "shared"


def _drivers(command: list[str], env: dict[str, str], count: int) -> list[subprocess.Popen[str]]:
    return [subprocess.Popen([*command, "--shard", f"{i}/{count}"], env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             start_new_session=True) for i in range(1, count + 1)]


def _kill_all(pids: set[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _whole_grid_once(root: Path) -> None:
    assert run_sql(root, "select count(*), count(distinct trial_id), "
                         "count(*) filter (where status = 'complete') from trials "
                         f"where run_id = '{RUN}'").rows == [(GRID, GRID, GRID)]
    assert run_sql(root, "select count(*) from trials_all").rows == [(GRID,)]  # none twice
    listed = run_named(root, "runs_list")
    row = dict(zip(listed.columns, listed.rows[0], strict=True))
    assert (len(listed.rows), row["grid"], row["passed"]) == (1, GRID, GRID)  # one run
    assert row["finished"] != "unfinished"


@pytest.mark.slow
def test_two_drivers_of_one_run_finish_its_grid_together(
        ray_local: Any, prefect_harness: None, tmp_path: Path) -> None:
    home = tmp_path / "home"
    spec = slow_grid_spec(tmp_path, latency_ms=5, extra="batch_size: 8\n")
    command = [str(BIN / "agentsweep"), "run", "--spec", str(spec), "--run-id", RUN]
    env = driver_env(home, RAY_ADDRESS=str(ray_local.get_runtime_context().gcs_address))
    drivers = _drivers(command, env, 2)
    said = [d.communicate(timeout=240)[0] for d in drivers]
    assert [d.returncode for d in drivers] == [0, 0], said
    executed = [int(text.split("executed ")[1].split(",")[0]) for text in said]
    assert sum(executed) == GRID and all(0 < n < GRID for n in executed)  # each its slice
    assert all("trials in the other shards' slices" in text for text in said)
    _whole_grid_once(home / "warehouse")
    assert run_sql(home / "warehouse", "select count(*) from runs where run_id = 'shared' "
                   "and finished_at is not null").rows == [(2,)]  # one invocation a shard
    # the last shard to end compacted the run, once no other shard wrote to it
    files = [p.name for p in (home / "warehouse" / "trials" / f"run_id={RUN}").iterdir()]
    assert files and all(name.startswith("compact-") for name in files), files


@pytest.mark.slow
def test_shards_on_two_machines_share_a_run_in_a_bucket(
        ray_local: Any, prefect_harness: None, tmp_path: Path, bucket: S3Location) -> None:
    """Two homes (no lock file in common): the shards' leases in the bucket. Shard 1 is killed
    mid-way; a resume from its machine takes over its lease at once (its driver is gone) and
    runs the rest once shard 2 ended."""
    spec = slow_grid_spec(tmp_path, latency_ms=60, extra="batch_size: 4\n")
    command = [str(BIN / "agentsweep"), "run", "--spec", str(spec), "--run-id", RUN]
    ray = str(ray_local.get_runtime_context().gcs_address)
    envs = [driver_env(tmp_path / f"home{n}", RAY_ADDRESS=ray,
                       AGENTSWEEP_WAREHOUSE=str(bucket)) for n in (1, 2)]
    first, second = drivers = [
        subprocess.Popen([*command, "--shard", f"{n}/2"], env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         start_new_session=True) for n, env in ((1, envs[0]), (2, envs[1]))]
    try:
        deadline = time.monotonic() + 240
        while not live_records(bucket, [RUN]):
            assert time.monotonic() < deadline and first.poll() is None
            time.sleep(0.1)
        assert first.poll() is None, "shard 1 finished before it could be killed"
        _kill_all({first.pid, *descendants(first.pid)})
        first.wait(timeout=10)
        assert second.communicate(timeout=240)[0] and second.returncode == 0
    finally:
        for driver in drivers:
            if driver.poll() is None:
                driver.kill()
            if driver.stdout is not None:
                driver.stdout.close()
    assert get_object(bucket, shard_lease_key(RUN, "2-of-2")) is None  # given back
    assert get_object(bucket, shard_lease_key(RUN, "1-of-2")) is not None  # left by the dead
    resumed = subprocess.run([*command, "--resume"], env=envs[0], capture_output=True,
                             text=True, timeout=150, check=False)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    counted = run_sql(bucket, "select count(*), count(distinct trial_id), count(*) filter "
                      f"(where status = 'complete') from trials where run_id = '{RUN}'")
    assert counted.rows == [(GRID, GRID, GRID)]


@pytest.mark.slow
def test_a_shard_killed_mid_way_is_resumed_once_no_driver_runs_it(
        ray_local: Any, prefect_harness: None, tmp_path: Path) -> None:
    home = tmp_path / "home"
    spec = slow_grid_spec(tmp_path, latency_ms=60, extra="batch_size: 4\n")
    command = [str(BIN / "agentsweep"), "run", "--spec", str(spec), "--run-id", RUN]
    env = driver_env(home, RAY_ADDRESS=str(ray_local.get_runtime_context().gcs_address))
    root = home / "warehouse"
    first, second = drivers = _drivers(command, env, 2)
    spawned: set[int] = set()
    try:
        deadline = time.monotonic() + 240  # a hang guard: a loaded machine starts slowly
        while not list((root / "trials" / f"run_id={RUN}").glob("*.parquet")):
            assert time.monotonic() < deadline and first.poll() is None
            spawned |= set(descendants(first.pid))
            time.sleep(0.05)
        spawned |= set(descendants(first.pid))
        assert first.poll() is None, "shard 1 finished before it could be killed"
        first.kill()  # SIGKILL: no lock given back by hand, no finish recorded
        first.wait(timeout=10)
        _kill_all(spawned)  # anything it left behind
        assert second.poll() is None, "shard 2 finished before shard 1 was killed"
        # while shard 2's driver lives (paused, so it does not end meanwhile), a resume of
        # the whole run is refused and told which shard it may take
        os.kill(second.pid, signal.SIGSTOP)
        try:
            refused = subprocess.run([*command, "--resume"], env=env, capture_output=True,
                                     text=True, timeout=120, check=False)
        finally:
            os.kill(second.pid, signal.SIGCONT)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert "shards of this run are being run (shard 2/2 by" in refused.stderr
        assert "resume a shard no driver runs with --resume --shard 1/2" in refused.stderr
        assert second.communicate(timeout=240)[0] and second.returncode == 0
    finally:
        _kill_all(spawned)
        for driver in drivers:
            if driver.poll() is None:
                driver.kill()
            if driver.stdout is not None:
                driver.stdout.close()
    written = run_sql(root, "select count(*) from trials_all").rows[0][0]
    assert 0 < written < GRID  # shard 1's slice is not all there
    listed = run_named(root, "runs_list")
    assert dict(zip(listed.columns, listed.rows[0], strict=True))["finished"] == "unfinished"

    resumed = subprocess.run([*command, "--resume"], env=env, capture_output=True,
                             text=True, timeout=150, check=False)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"executed {GRID - written}, skipped {written} (already final)" in resumed.stdout
    _whole_grid_once(root)
