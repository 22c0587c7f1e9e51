"""A cold run's own Prefect API (pipeline.runtime.prefect_api): started before Prefect's import,
in the form Prefect gives its ephemeral API (so the orphan sweep of a later run recognises it),
on the home's own database, and gone with the run."""

from __future__ import annotations

import os
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.runtime import prefect_api
from pipeline.runtime.hygiene import prepare_prefect_home
from pipeline.runtime.prefect_api import API_FACTORY, EPHEMERAL_MARK
from pipeline.runtime.prefect_state import own_database
from pipeline.util.procfs import cmdline


@pytest.fixture
def prefect_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    prefect_api.stop()  # an in-process run of an earlier test in this worker may have one
    for key in ("PREFECT_API_URL", "PREFECT_API_DATABASE_CONNECTION_URL",
                "PREFECT_SERVER_DATABASE_CONNECTION_URL"):
        monkeypatch.delenv(key, raising=False)
    home = tmp_path / "prefect"
    monkeypatch.setenv("PREFECT_HOME", str(home))
    prepare_prefect_home(home)
    yield home
    prefect_api.stop()


@pytest.mark.slow  # starts a Prefect API
def test_the_runs_api_answers_on_loopback_and_stops_with_the_run(prefect_home: Path) -> None:
    api = prefect_api.start()
    assert api is not None and prefect_api.start() is api  # once per process
    assert os.environ["PREFECT_API_URL"] == api.url and api.url.startswith("http://127.0.0.1:")
    api.ready(timeout_s=120)
    with urllib.request.urlopen(f"{api.url}/health", timeout=5) as reply:
        assert reply.status == 200
    pid = api.process.pid
    assert API_FACTORY in cmdline(pid)
    assert EPHEMERAL_MARK in Path(f"/proc/{pid}/environ").read_bytes()
    # still the home's own database: its checks and marker apply (prefect_state)
    assert own_database(prefect_home) == prefect_home / "prefect.db"
    prefect_api.stop()
    assert api.process.poll() is not None
    assert "PREFECT_API_URL" not in os.environ and prefect_api.current() is None
    assert own_database(prefect_home) == prefect_home / "prefect.db"


def test_no_api_is_started_when_the_process_has_one(prefect_home: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")  # a stack, a server
    assert prefect_api.start() is None and prefect_api.current() is None
    assert own_database(prefect_home) is None


HELD_LOG = """
import sqlite3, time
from pipeline.runtime import hygiene
hygiene.apply()
from pipeline.runtime import prefect_api
from pipeline.runtime.hygiene import prefect_home, prepare_prefect_home
prepare_prefect_home()
prefect_api.start().ready(timeout_s=120)
from prefect import flow
from prefect.logging.handlers import APILogWorker

@flow(name="held-log")
def held() -> str:
    from prefect.runtime import flow_run
    return str(flow_run.id)

run_id = held()
def log(message: str) -> None:
    APILogWorker.instance().send({"name": "agentsweep.test", "level": 20, "message": message,
                                  "timestamp": "2026-12-07T00:00:00+00:00",
                                  "flow_run_id": run_id})
log("sent line " + "x" * 1200)  # a whole batch: sent at once, the log worker's client connects
with sqlite3.connect(prefect_home() / "prefect.db") as db:
    while not db.execute("select count(*) from log where message like 'sent line%'").fetchone()[0]:
        time.sleep(0.1)
# A line Prefect still holds when the run stops its API (its batch waits for the interval; a
# flow engine gives up waiting for the log worker after 5 s, on a busy machine):
log("held line")
prefect_api.stop()
print("api stopped", flush=True)
"""


@pytest.mark.slow
def test_what_prefect_still_holds_is_sent_before_the_api_stops_and_the_process_exits(
        tmp_path: Path) -> None:
    """A log batch still held when the run stopped its API was retried with backoff at the
    interpreter's exit (Prefect's client retries a refused connection once it has connected),
    to an API that was gone: the run said its last line, then did not exit for a minute."""
    import sqlite3
    import subprocess
    import sys
    import time

    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_"))}
    env.update(AGENTSWEEP_HOME=str(home), PREFECT_LOGGING_TO_API_BATCH_INTERVAL="3600",
               PREFECT_LOGGING_TO_API_BATCH_SIZE="2000", PREFECT_LOGGING_TO_API_MAX_LOG_SIZE="1500")
    program = subprocess.Popen([sys.executable, "-c", HELD_LOG], env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert program.stdout is not None
    assert program.stdout.readline() == "api stopped\n", program.communicate()
    stopped = time.monotonic()
    _, err = program.communicate(timeout=120)  # a hang guard: the bound is asserted below
    assert program.returncode == 0, err
    assert time.monotonic() - stopped < 20, "the process did not exit after its API stopped"
    with sqlite3.connect(home / "prefect" / "prefect.db") as db:
        held = db.execute("select count(*) from log where message = 'held line'").fetchone()
    assert held == (1,), "the held log line never reached Prefect's database"
