"""Ray's and Prefect's start-up waits: settable, and longer on a busy machine than Ray's 30 s
and Prefect's 20 s."""

from __future__ import annotations

import inspect
import os
import time
from types import SimpleNamespace
from typing import Any

import pytest

from pipeline.runtime import hygiene, startup
from pipeline.runtime.local_ray import GCS_PORT_WAIT_ENV, RayletWaitOver, raylet_wait


@pytest.mark.parametrize(("load", "cpus", "wait_s"), [
    (0.0, 2, 120.0), (4.0, 2, 120.0), (8.0, 2, 240.0), (30.0, 2, 900.0), (70.0, 2, 900.0),
])
def test_the_default_wait_grows_with_the_load(monkeypatch: pytest.MonkeyPatch, load: float,
                                              cpus: int, wait_s: float) -> None:
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(os, "cpu_count", lambda: cpus)
    monkeypatch.delenv(startup.RAY_START_ENV, raising=False)
    monkeypatch.delenv(startup.PREFECT_START_ENV, raising=False)
    assert startup.ray_start_timeout_s() == wait_s
    assert startup.prefect_start_timeout_s() == wait_s
    hygiene.apply()  # Prefect reads its wait at import: set for this load, once
    assert os.environ[startup.PREFECT_START_ENV] == f"{wait_s:.0f}"
    monkeypatch.setenv(startup.RAY_START_ENV, "2.5")
    assert startup.ray_start_timeout_s() == 2.5


@pytest.mark.parametrize(("name", "value"), [
    (startup.RAY_START_ENV, "soon"), (startup.RAY_START_ENV, "-1"),
    (startup.PREFECT_START_ENV, "1.5"),  # Prefect reads an integer
])
def test_a_wait_that_is_no_number_of_seconds_is_refused(monkeypatch: pytest.MonkeyPatch,
                                                        name: str, value: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(startup.StartupSettingError, match=f"^{name}="):
        startup.check_settings()


def test_rays_node_still_waits_for_its_raylet_through_services_get_node() -> None:
    """What raylet_wait replaces: Ray's fixed wait asks services.get_node in a loop and gives
    up after a RuntimeError that lasts 30 s (an upgrade that changes this fails here)."""
    from ray._private.node import Node

    source = inspect.getsource(Node.__init__)
    assert "raylet_start_wait_time_s = 30" in source
    assert "ray._private.services.get_node(" in source and "except RuntimeError" in source
    assert f'os.environ.get("{GCS_PORT_WAIT_ENV}"' in inspect.getsource(Node)


def test_prefect_still_says_its_ephemeral_api_timed_out_so() -> None:
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("prefect")
    assert spec is not None and spec.origin is not None
    source = Path(spec.origin).parent / "server" / "api" / "server.py"  # not imported: 5 s
    assert f'"{startup.PREFECT_EPHEMERAL_TIMEOUT}' in source.read_text("utf-8")


def _not_registered(*_: Any) -> Any:
    raise RuntimeError("node not found")  # what Ray's get_node raises until it registers


def test_the_raylet_wait_is_the_setting_not_rays_30_s(monkeypatch: pytest.MonkeyPatch) -> None:
    from ray._private import services

    answers = iter([RuntimeError("node not found")] * 3 + [None])

    def registers_late(*_: Any) -> Any:
        answer = next(answers)
        if answer is not None:
            raise answer
        return {"node_id": "n"}

    monkeypatch.setattr(services, "get_node", registers_late)
    monkeypatch.delenv(GCS_PORT_WAIT_ENV, raising=False)
    with raylet_wait(300):
        assert services.get_node("127.0.0.1:1", "n") == {"node_id": "n"}
        assert os.environ[GCS_PORT_WAIT_ENV] == "300"  # the GCS server's start too
    assert GCS_PORT_WAIT_ENV not in os.environ
    monkeypatch.setattr(services, "get_node", _not_registered)
    started = time.monotonic()
    with raylet_wait(0.3), pytest.raises(RayletWaitOver,
                                         match="its raylet did not register within 0.3 s"):
        services.get_node("127.0.0.1:1", "n")
    assert 0.3 <= time.monotonic() - started < 3
    assert services.get_node is _not_registered  # put back


def test_the_raylet_wait_ends_when_the_raylet_exited(monkeypatch: pytest.MonkeyPatch) -> None:
    from ray._private import ray_constants, services

    dead = SimpleNamespace(process=SimpleNamespace(poll=lambda: 1, returncode=1))
    monkeypatch.setattr(services, "start_ray_process", lambda *_, **__: dead)
    monkeypatch.setattr(services, "get_node", _not_registered)
    started = time.monotonic()
    with raylet_wait(60), pytest.raises(RayletWaitOver, match="raylet exited with code 1"):
        services.start_ray_process(["raylet"], ray_constants.PROCESS_TYPE_RAYLET, True)
        services.get_node("127.0.0.1:1", "n")
    assert time.monotonic() - started < 5
