"""A start-up that fails on a busy machine is one line and exit 3, never a traceback, by every
door (agentsweep run, agentsweep up, the flow programs): Ray's node that did not register in
its wait, the run's own Prefect API or Prefect's ephemeral one that did not answer; each line
names the setting of the wait and agentsweep up."""

from __future__ import annotations

import os
import time
from typing import Any

import pytest
from conftest import MEETING_SUITE
from helpers.commands import cli

from pipeline.execution import executor
from pipeline.runtime import local_ray
from pipeline.runtime.prefect_api import STARTUP_TIMEOUT_ENV, PrefectApiError
from pipeline.runtime.startup import PREFECT_EPHEMERAL_TIMEOUT, RAY_START_ENV, RayStartError

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
    assert raised.value.setting == RAY_START_ENV
    assert executor.session_open() == opened  # no session was counted for it


def test_a_ctrl_c_while_the_node_starts_stays_an_interrupt(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*_: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(local_ray, "start_node", interrupted)
    with pytest.raises(KeyboardInterrupt):
        local_ray.NodeInThread(1, 1, "/tmp").node()


RAY_FAILED = RayStartError("could not start or join a local Ray: its raylet did not register "
                           "within 120 s", RAY_START_ENV)
FAILURES = [
    (RAY_FAILED, ("could not start or join a local Ray: its raylet did not register within "
                  "120 s", RAY_START_ENV)),
    (PrefectApiError("the run's Prefect API did not answer within 180 s"),
     ("the run's Prefect API did not answer within 180 s", STARTUP_TIMEOUT_ENV)),
]


@pytest.mark.parametrize(("failure", "words"), FAILURES)
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
    # a new run that never started has nothing to resume: the same command runs it
    for word in (*words, "nothing ran (exit 3)", "agentsweep up", "run the same command again"):
        assert word in line, line
    assert "--resume" not in line


class _FailingFlow:
    """A flow whose run fails as ``failure`` (in place of the real one: nothing starts)."""

    def __init__(self, failure: Exception) -> None:
        self.failure = failure

    def with_options(self, **_: object) -> _FailingFlow:
        return self

    def __call__(self, *_: object, **__: object) -> Any:
        raise self.failure


def _spec(tmp_path: Any, models: list[str]) -> str:
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"suites: [{MEETING_SUITE}]\nscenarios: [V1]\nmodels: "
                    f"[{', '.join(models)}]\nmemory_modes: [chat]\nrepeats: 1\n")
    return str(spec)


EPHEMERAL = RuntimeError(f"{PREFECT_EPHEMERAL_TIMEOUT} server. stdout: None")
"""What Prefect's own ephemeral API raises when it did not answer (a flow program's)."""


@pytest.mark.parametrize(("failure", "words"), [
    *FAILURES, (EPHEMERAL, ("Prefect's ephemeral API did not answer within 7 s",
                            STARTUP_TIMEOUT_ENV))])
@pytest.mark.parametrize("door", ["nightly", "model_swap"])
def test_a_flow_program_says_a_failed_start_up_in_one_line_and_exits_3(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Any, capsys: pytest.CaptureFixture[str],
        failure: Exception, words: tuple[str, ...], door: str) -> None:
    import flows.model_swap
    import flows.nightly

    monkeypatch.setenv("AGENTSWEEP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(STARTUP_TIMEOUT_ENV, "7")
    if door == "nightly":
        monkeypatch.setattr(flows.nightly, "nightly", _FailingFlow(failure))
        code = flows.nightly.run_once(_spec(tmp_path, ["reference/golden"]), None, "busy-n")
    else:
        monkeypatch.setattr(flows.model_swap, "model_swap", _FailingFlow(failure))
        code = flows.model_swap.run_once(
            _spec(tmp_path, ["reference/golden", "reference/mutant-ignores-switch"]), None,
            None, "busy-s")
    err = capsys.readouterr().err
    assert code == 3, err
    (line,) = err.strip().splitlines()
    assert line.startswith("error: ") and "Traceback" not in err
    kept = "nothing ran (exit 3)" if door == "nightly" else "finished trials are kept (exit 3)"
    for word in (*words, kept, "agentsweep up"):
        assert word in line, line


def test_agentsweep_up_says_a_service_that_did_not_start_in_one_line_and_exits_3(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    from pipeline.runtime import stack

    def ray_late(**_: object) -> Any:
        raise stack.StackStartError("the stack's Ray head did not answer within 180 s: see "
                                    "ray.log", RAY_START_ENV)

    monkeypatch.setenv("AGENTSWEEP_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(stack, "up", ray_late)
    code, out, err = cli("up")
    assert code == 3, (out, err)
    (line,) = err.strip().splitlines()
    assert line == ("error: the stack's Ray head did not answer within 180 s: see ray.log; the "
                    "stack is not up (exit 3). On a busy machine, raise "
                    f"{RAY_START_ENV} and run agentsweep up again")


def test_the_stack_gives_up_on_a_service_after_its_wait_and_names_its_setting(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    from pipeline.runtime import stack

    alive = os.getsid(0)  # a session that is there: this test's own
    state = stack.StackState("127.0.0.1:1", str(tmp_path), alive, "http://127.0.0.1:1/api",
                             alive, 0.0)
    monkeypatch.setattr(stack, "RAY_SLACK_S", 0.0)
    with pytest.raises(stack.StackStartError) as raised:
        stack._wait(state, tmp_path / "stack", time.monotonic(), (0.2, 60.0))
    assert str(raised.value).startswith("the stack's Ray head did not answer within 0 s")
    assert raised.value.setting == RAY_START_ENV
