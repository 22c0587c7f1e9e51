"""A lost Ray head or Prefect API is told apart from a bug, in seconds, in one line."""

from __future__ import annotations

import socket
from pathlib import Path

import httpx
import pytest
from conftest import MEETING_SUITE
from helpers.commands import cli

from pipeline.execution.head import HeadWatch, RayHeadLost
from pipeline.runtime.probe import port_answers, prefect_api_lost, prefect_lost_line


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_head_that_stays_silent_is_lost_after_two_seconds_of_probes() -> None:
    clock = FakeClock()
    answering = [True]
    watch = HeadWatch("127.0.0.1:1", answers=lambda _: answering[0], now=clock.now)
    for _ in range(5):  # answers: nothing happens, and probes are spaced a second apart
        clock.sleep(1.0)
        watch.check()
    answering[0] = False
    clock.sleep(0.5)
    watch.check()  # not due yet (0.5 s since the last probe): no probe at all
    clock.sleep(0.5)
    watch.check()  # first silence
    clock.sleep(1.0)
    watch.check()  # silent 1 s: not yet lost
    assert not watch.lost
    clock.sleep(1.0)
    with pytest.raises(RayHeadLost, match="the Ray head at 127.0.0.1:1 stopped answering"):
        watch.check()
    assert watch.lost


def test_a_head_that_answers_again_is_not_lost() -> None:
    clock = FakeClock()
    answers = iter([False, False, True])
    watch = HeadWatch("127.0.0.1:1", answers=lambda _: next(answers), now=clock.now)
    watch.confirm(sleep=clock.sleep)  # a blip: two silent probes, then an answer
    assert not watch.lost and clock.t == 1.0


def test_confirm_raises_when_the_head_stays_silent() -> None:
    clock = FakeClock()
    watch = HeadWatch("127.0.0.1:1", answers=lambda _: False, now=clock.now)
    with pytest.raises(RayHeadLost):
        watch.confirm(sleep=clock.sleep)
    assert clock.t == 2.0


def test_without_an_address_nothing_is_probed() -> None:
    def never(_: str) -> bool:
        raise AssertionError("probed")

    watch = HeadWatch(None, answers=never, now=lambda: 1e9)
    watch.check()
    watch.confirm()


def test_port_answers_a_listening_socket_only() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        assert port_answers(f"127.0.0.1:{server.getsockname()[1]}")
    assert not port_answers(f"127.0.0.1:{_closed_port()}")


def test_a_connection_error_to_a_prefect_api_that_is_gone_is_a_lost_server(
        monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/api"
    monkeypatch.setenv("PREFECT_API_URL", url)
    try:
        raise RuntimeError("task failed") from httpx.ConnectError("Connection refused")
    except RuntimeError as exc:
        assert prefect_api_lost(exc) == url
        line = prefect_lost_line(exc, "run r1", "agentsweep run --run-id r1 --resume")
    assert line is not None and url in line and line.endswith("--run-id r1 --resume")
    assert prefect_api_lost(ValueError("a bug")) is None  # a bug stays a bug


def test_a_connection_error_while_the_api_answers_is_not_a_lost_server(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        monkeypatch.setenv("PREFECT_API_URL", f"http://127.0.0.1:{server.getsockname()[1]}/api")
        assert prefect_api_lost(httpx.ConnectError("refused")) is None


@pytest.mark.slow  # starts a Prefect API and a local Ray
def test_run_ends_in_one_line_and_exit_3_when_prefect_goes_away(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import flows.sweep

    url = f"http://127.0.0.1:{_closed_port()}/api"

    def server_gone(*_: object, **__: object) -> None:
        monkeypatch.setenv("PREFECT_API_URL", url)  # the API this run was using
        raise httpx.ConnectError("[Errno 111] Connection refused")

    monkeypatch.setenv("AGENTSWEEP_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(flows.sweep, "run_sweep", server_gone)
    code, out, err = cli("run", "--suite", str(MEETING_SUITE), "--scenario", "V1",
                         "--memory-mode", "chat", "--repeats", "1", "--model",
                         "reference/golden", "--run-id", "lost-prefect")
    assert code == 3, (out, err)
    assert err.strip().splitlines() == [
        f"error: the Prefect server at {url} stopped answering during run lost-prefect; every "
        "finished trial is saved. Start it again (agentsweep up), then: agentsweep run "
        "--run-id lost-prefect --resume"]
