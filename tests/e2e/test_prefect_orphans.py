"""An ephemeral Prefect API whose driver was SIGKILLed is stopped by the next run in that home;
a live driver's API, one on another database and a server a person started are left alone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.runtime.prefect_api import API_FACTORY
from pipeline.runtime.prefect_state import DB_NAME, stop_orphaned_apis

HOLD = "import sys, time; handle = open(sys.argv[1], 'rb'); time.sleep(120)"


def _orphan(db: Path, ephemeral: bool = True) -> int:
    """A process that looks like an API (its command line, its environment) holding ``db``,
    whose parent has exited (so init is its parent now)."""
    env = {**os.environ, **({"PREFECT__SERVER_EPHEMERAL": "1"} if ephemeral else {})}
    line = subprocess.run(
        ["bash", "-c", '"$0" -c "$1" "$2" "$3" >/dev/null 2>&1 & echo $!', sys.executable,
         HOLD, str(db), API_FACTORY], env=env, capture_output=True, text=True, check=True)
    return int(line.stdout.strip())


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def _wait_holding(pid: int, db: Path) -> None:
    deadline = time.monotonic() + 60  # a hang guard
    while time.monotonic() < deadline:
        try:
            if str(db) in [os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()]:
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"pid {pid} never opened {db}")


@pytest.fixture
def started() -> Iterator[list[int]]:
    pids: list[int] = []
    yield pids
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_only_an_orphaned_ephemeral_api_on_this_database_is_stopped(
        tmp_path: Path, started: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PREFECT_API_URL", "PREFECT_API_DATABASE_CONNECTION_URL",
                 "PREFECT_SERVER_DATABASE_CONNECTION_URL"):
        monkeypatch.delenv(name, raising=False)
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    for home in (ours, theirs):
        home.mkdir()
        (home / DB_NAME).write_bytes(b"")
    orphan = _orphan((ours / DB_NAME).resolve())
    elsewhere = _orphan((theirs / DB_NAME).resolve())
    by_hand = _orphan((ours / DB_NAME).resolve(), ephemeral=False)
    live = subprocess.Popen([sys.executable, "-c", HOLD, str((ours / DB_NAME).resolve()),
                             API_FACTORY], env={**os.environ, "PREFECT__SERVER_EPHEMERAL": "1"})
    started += [orphan, elsewhere, by_hand, live.pid]
    for pid, db in ((orphan, ours), (elsewhere, theirs), (by_hand, ours), (live.pid, ours)):
        _wait_holding(pid, (db / DB_NAME).resolve())

    assert stop_orphaned_apis(ours) == [orphan]
    assert not _alive(orphan)
    assert _alive(elsewhere) and _alive(by_hand) and _alive(live.pid)
    assert stop_orphaned_apis(ours) == []
    live.kill()
    live.wait()
