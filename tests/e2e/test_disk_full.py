"""A full disk: refused before the start, a clean one-line stop mid-sweep with nothing
half-written, a resume that completes the grid once, and a half-migrated Prefect database set
aside instead of waited on.

The tiny disks are real tmpfs mounts (root only: CI runs as root)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import MEETING_SUITE
from helpers.commands import agentsweep

from pipeline.runtime.prefect_state import (
    DB_NAME,
    MARKER_NAME,
    diagnose,
    mark_good,
    migration_head,
    set_aside_if_broken,
)
from pipeline.sweep.config import SweepConfig
from pipeline.sweep.stages import BatchSink, execute_plan, plan
from warehouse.diskspace import DiskFull, is_no_space
from warehouse.query import run_sql

BIN = Path(sys.executable).parent


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 48 MB filesystem of its own (tmpfs)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (CI runs as root)")
    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path) -> Path:
    """Write until the disk is full; the filler file."""
    filler = disk / "filler"
    chunk = b"\0" * (1024 * 1024)
    with open(filler, "wb", buffering=0) as handle:
        try:
            while True:
                handle.write(chunk)
        except OSError as exc:
            assert is_no_space(exc)
    return filler


def _agentsweep(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return agentsweep(home, *args, timeout=240, **env)


@pytest.mark.slow  # starts an agentsweep process
def test_a_disk_without_room_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    home = tmp_path / "home"
    result = _agentsweep(home, "run", "--suite", str(MEETING_SUITE), "--repeats", "1",
                         AGENTSWEEP_MIN_FREE_MB="100000000")
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"error: {home / 'warehouse'}: only ") and "MB free" in line, line
    assert "AGENTSWEEP_MIN_FREE_MB" in line
    assert not home.exists()


@pytest.mark.slow
def test_a_full_warehouse_disk_stops_the_sweep_cleanly_and_a_resume_completes_it(
        ray_local: Any, tiny_disk: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tiny_disk / "warehouse"
    # Two trials in flight: when the first part is committed, parts are still to be written
    # (with the whole grid in flight every part could be written before the first commit).
    config = SweepConfig(suites=[MEETING_SUITE], memory_modes=["chat"], repeats=1,
                         run_id="full", warehouse=root, batch_size=5, max_in_flight=2)
    sweep_plan = plan(config)
    filler: list[Path] = []
    commit = BatchSink.commit

    def commit_then_fill(sink: BatchSink, part: Any) -> None:
        # The disk fills once a part has landed: a trial's outcome reaches the driver before
        # its worker has written the part, so counting outcomes could fill it before any did.
        commit(sink, part)
        if not filler:
            filler.append(fill(tiny_disk))

    monkeypatch.setattr(BatchSink, "commit", commit_then_fill)
    with pytest.raises(DiskFull) as stopped:
        execute_plan(config, sweep_plan)
    assert str(stopped.value).startswith(f"no space left on the disk of {root}")
    assert not list(root.rglob("*.tmp")), "a half-written file was left"
    trials = {r[0] for r in run_sql(root, "select trial_id from trials").rows}
    attempted = {r[0] for r in run_sql(root, "select trial_id from attempts").rows}
    # whole batches only (the worker writes its parts: as many as it wrote before the disk
    # filled), attempts with them
    assert len(trials) % 5 == 0 and 5 <= len(trials) < sweep_plan.grid_size
    assert attempted == trials

    filler[0].unlink()
    resumed = execute_plan(config, plan(config.model_copy(update={"resume": True})))
    assert sum(resumed.values()) == sweep_plan.grid_size - len(trials)
    counts = run_sql(root, "select count(*), count(distinct trial_id) from trials").rows[0]
    assert counts == (sweep_plan.grid_size, sweep_plan.grid_size)
    assert run_sql(root, "select count(*), max(attempt) from attempts").rows[0] == (
        sweep_plan.grid_size, 1)


def _fill_when(path: Path, disk: Path, done: list[Path]) -> None:
    deadline = time.monotonic() + 200
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    done.append(fill(disk))


@pytest.mark.slow
def test_a_disk_that_fills_mid_run_is_one_line_then_resume_and_a_broken_prefect_db_is_rebuilt(
        tiny_disk: Path) -> None:
    home = tiny_disk / "home"
    args = ("run", "--suite", str(MEETING_SUITE), "--repeats", "1", "--memory-mode", "chat",
            "--run-id", "mid")
    filled: list[Path] = []
    # The run's first `runs` row lands when the flow starts, its trials when they finish.
    watcher = threading.Thread(target=_fill_when,
                               args=(home / "warehouse" / "runs", tiny_disk, filled))
    watcher.start()
    result = _agentsweep(home, *args, AGENTSWEEP_MIN_FREE_MB="16")
    watcher.join()
    assert result.returncode == 3, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert line.startswith("error: ") and f"no space left on the disk of {home}" in line, line
    assert line.endswith("agentsweep run --run-id mid --resume"), line

    filled[0].unlink()
    resumed = _agentsweep(home, "run", "--run-id", "mid", "--resume", AGENTSWEEP_MIN_FREE_MB="16")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    root = home / "warehouse"
    trials, distinct = run_sql(root, "select count(*), count(distinct trial_id) from trials "
                                     "where status = 'complete'").rows[0]
    assert trials == distinct > 0
    assert run_sql(root, "select count(*) from attempts").rows == [(trials,)]

    # A migration stopped half-way: the schema is ahead of the revision Alembic recorded.
    prefect = home / "prefect"
    assert json.loads((prefect / MARKER_NAME).read_text())["revision"] == migration_head()
    _rewind_revision(prefect / DB_NAME)
    assert diagnose(prefect) is not None
    started = time.monotonic()
    rebuilt = _agentsweep(home, *args[:-1], "again", AGENTSWEEP_MIN_FREE_MB="16")
    assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
    assert time.monotonic() - started < 150  # Prefect's start-up timeout is 180 s
    assert "note: Prefect's database" in rebuilt.stderr and "moved it to" in rebuilt.stderr
    set_aside = list(prefect.glob("broken-*"))
    assert len(set_aside) == 1, resumed.stderr + rebuilt.stderr
    aside = set_aside[0]
    assert (aside / DB_NAME).exists() and diagnose(prefect) is None


def _rewind_revision(db: Path) -> None:
    parent = _parent_revision(str(migration_head()))
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE alembic_version SET version_num = ?", (parent,))


def _parent_revision(revision: str) -> str:
    import importlib.util
    import re

    spec = importlib.util.find_spec("prefect")
    assert spec is not None and spec.origin is not None
    folder = Path(spec.origin).parent / "server/database/_migrations/versions/sqlite"
    for path in folder.glob(f"*_{revision}_*.py"):
        found = re.search(r'^down_revision\s*=\s*"([0-9a-f]+)"', path.read_text(), re.MULTILINE)
        assert found is not None
        return found.group(1)
    raise AssertionError(f"no migration file for {revision}")


def _database(path: Path, revision: str | None, tables: tuple[str, ...] = ("flow",)) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as conn:
        for table in tables:
            conn.execute(f"CREATE TABLE {table} (id TEXT)")
        if revision is not None:
            conn.execute("CREATE TABLE alembic_version (version_num TEXT)")
            conn.execute("INSERT INTO alembic_version VALUES (?)", (revision,))


def test_prefect_database_diagnosis(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PREFECT_API_URL", "PREFECT_API_DATABASE_CONNECTION_URL"):
        monkeypatch.delenv(name, raising=False)
    head = migration_head()
    assert head is not None and len(head) == 12
    parent = _parent_revision(head)

    assert diagnose(tmp_path / "none") is None  # no database yet: Prefect makes one

    current = tmp_path / "current"
    _database(current / DB_NAME, head)
    assert diagnose(current) is None

    older = tmp_path / "older"  # an older Prefect's database, as the last good run left it
    _database(older / DB_NAME, parent)
    assert diagnose(older) is not None  # no marker: cannot tell it from a half-migration
    mark_good(older)
    assert diagnose(older) is None
    with sqlite3.connect(older / DB_NAME) as conn:  # a migration then stopped half-way
        conn.execute("ALTER TABLE flow ADD COLUMN state_timestamp TEXT")
    problem = diagnose(older)
    assert problem is not None and "half-way" in problem

    unrecorded = tmp_path / "unrecorded"
    _database(unrecorded / DB_NAME, None)
    assert diagnose(unrecorded) == "no migration revision recorded"

    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / DB_NAME).write_bytes(b"SQLite format 3\0" + os.urandom(4096))
    assert diagnose(garbage) is not None
    moved = set_aside_if_broken(garbage)
    assert moved is not None and (moved[1] / DB_NAME).exists()
    assert not (garbage / DB_NAME).exists() and set_aside_if_broken(garbage) is None

    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:4200/api")
    assert diagnose(unrecorded) is None  # a server elsewhere owns its database
