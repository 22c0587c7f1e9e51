"""A start-up that fails on a busy machine is one line and exit 3, never a traceback: Ray's
node that did not register in its 30 s, the run's own Prefect API that did not answer."""

from __future__ import annotations

import os
from typing import Any

import pytest
from conftest import MEETING_SUITE
from helpers.commands import cli

from pipeline.execution import executor
from pipeline.runtime import local_ray
from pipeline.runtime.prefect_api import STARTUP_TIMEOUT_ENV, PrefectApiError

RAY_TIMEOUT = ("The current node timed out during startup. This could happen because some of "
               "the raylet failed to startup or the GCS has become overloaded.")


def _times_out(*_: Any) -> Any:
    raise Exception(RAY_TIMEOUT)  # what Ray 2.60's Node raises after its 30 s


def test_a_local_node_that_times_out_is_a_ray_start_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import ray

    monkeypatch.setattr(local_ray, "start_node", _times_out)
    monkeypatch.setattr(executor, "_early_node", None)
    # as in a fresh process, whatever this worker joined before (the session's Ray)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(executor, "_cluster_is_ours", executor._cluster_is_ours)
    monkeypatch.setenv(executor.SINGLE_MACHINE_SWITCH,
                       os.environ.get(executor.SINGLE_MACHINE_SWITCH, "0"))
    opened = executor.session_open()
    with pytest.raises(executor.RayStartError) as raised, executor.ray_session():
        pass
    assert str(raised.value) == (
        "could not start or join a local Ray: The current node timed out during startup. This "
        "could happen because some of the raylet failed to startup or the GCS has become "
        "overloaded.")
    assert executor.session_open() == opened  # no session was counted for it


def test_a_ctrl_c_while_the_node_starts_stays_an_interrupt(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*_: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(local_ray, "start_node", interrupted)
    with pytest.raises(KeyboardInterrupt):
        local_ray.NodeInThread(1, 1, "/tmp").node()


@pytest.mark.parametrize(("failure", "words"), [
    (executor.RayStartError(f"could not start or join a local Ray: {RAY_TIMEOUT}"),
     ("could not start or join a local Ray: The current node timed out during startup",)),
    (PrefectApiError("the run's Prefect API did not answer within 180 s"),
     ("the run's Prefect API did not answer within 180 s", STARTUP_TIMEOUT_ENV)),
])
def test_a_start_up_that_fails_is_one_line_and_exit_3(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Any, failure: Exception,
        words: tuple[str, ...]) -> None:
    import flows.sweep
    from pipeline.cli import run

    def fails(*_: object, **__: object) -> None:
        raise failure

    monkeypatch.setenv("AGENTSWEEP_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(run, "_start_services_early", lambda prepared: None)  # nothing real
    monkeypatch.setattr(flows.sweep, "run_sweep", fails)
    code, out, err = cli("run", "--suite", str(MEETING_SUITE), "--scenario", "V1",
                         "--memory-mode", "chat", "--repeats", "1", "--run-id", "busy")
    assert code == 3, (out, err)
    (line,) = err.strip().splitlines()
    assert line.startswith("error: ") and "Traceback" not in out + err
    for word in (*words, "nothing ran (exit 3)", "agentsweep up",
                 "agentsweep run --run-id busy --resume"):
        assert word in line, line
