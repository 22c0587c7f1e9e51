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
