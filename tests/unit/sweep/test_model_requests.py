"""The switch that forbids real model requests in tests (``AGENTSWEEP_ALLOW_MODEL_REQUESTS=0``,
set by conftest, inherited by every subprocess and Ray worker; ``pytest --live`` turns it off).

A call to a real provider is refused before LiteLLM is even entered, so before any network
traffic; the in-process reference models and anything on loopback (local models, the reference
server) still run.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from conftest import MEETING_SUITE, REPO

from pipeline.errors import ConfigError, InfraError
from pipeline.models.client import (
    ALLOW_MODEL_REQUESTS,
    LiteLLMClient,
    litellm_module,
    refuse_if_forbidden,
)
from pipeline.reference.reference import SCRIPT_KEY
from pipeline.reference.server import ServerHandle, start_server
from pipeline.reference.wire import WireName
from pipeline.sweep.config import SweepConfig
from pipeline.sweep.grid import ModelConfig
from pipeline.sweep.stages import execute_plan, plan
from pipeline.trial.run import RunContext, run_trial
from warehouse.query import run_sql

FAKE_KEY = "sk-fake-never-sent-0123456789abcdef"
HELLO = [{"role": "user", "content": "Find a room for six people, please."}]
SCRIPT = {"turns": [{"actions": [
    {"call": {"name": "search_rooms", "arguments": {"capacity": 6}}},
    {"reply": "amber is free at 15:00."}]}]}


class Wire:
    """Every name lookup and connect of this process, refused and recorded (nothing leaves)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seen: list[tuple[str, Any]] = []
        monkeypatch.setattr(socket, "getaddrinfo", self._getaddrinfo)
        monkeypatch.setattr(socket.socket, "connect", self._connect)
        monkeypatch.setattr(socket.socket, "connect_ex", self._connect)
        litellm = litellm_module()
        real = litellm.completion

        def completion(*args: Any, **kwargs: Any) -> Any:
            self.seen.append(("litellm.completion", kwargs.get("model")))
            return real(*args, **kwargs)

        monkeypatch.setattr(litellm, "completion", completion)

    def _getaddrinfo(self, host: Any, *args: Any, **kwargs: Any) -> Any:
        self.seen.append(("getaddrinfo", host))
        raise socket.gaierror(socket.EAI_NONAME, "no network in this test")

    def _connect(self, sock: socket.socket, address: Any) -> Any:
        self.seen.append(("connect", address))
        raise ConnectionRefusedError("no network in this test")


@pytest.fixture
def wire(monkeypatch: pytest.MonkeyPatch) -> Wire:
    monkeypatch.setenv(ALLOW_MODEL_REQUESTS, "0")  # also under --live, in this process
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    return Wire(monkeypatch)


@pytest.fixture
def not_live(request: pytest.FixtureRequest) -> None:
    if request.config.getoption("--live"):
        pytest.skip("--live turns the switch off for the whole session")


def test_the_tests_run_with_the_switch_on(not_live: None) -> None:
    assert os.environ[ALLOW_MODEL_REQUESTS] == "0"


@pytest.mark.parametrize("params", [{}, {"api_base": "https://api.openai.com/v1"},
                                    {"api_base": "http://192.0.2.1:8000/v1"}],
                         ids=["default-endpoint", "provider-endpoint", "remote-endpoint"])
def test_a_real_provider_is_refused_before_any_network_traffic(
        wire: Wire, params: dict[str, str]) -> None:
    client = LiteLLMClient(ModelConfig("openai/gpt-4o-mini"), {"api_key": FAKE_KEY, **params})
    with pytest.raises(ConfigError) as refused:
        client.complete(HELLO, None)
    assert f"{ALLOW_MODEL_REQUESTS}=0" in str(refused.value)
    assert "openai/gpt-4o-mini" in str(refused.value) and "--live" in str(refused.value)
    assert FAKE_KEY not in str(refused.value)
    assert wire.seen == []  # LiteLLM never entered: no lookup, no connect


OTHER_PROVIDERS = {"anthropic/claude-3-5-haiku-latest": "https://api.anthropic.com",
                   "gemini/gemini-2.0-flash": "https://generativelanguage.googleapis.com/v1beta"}


@pytest.mark.parametrize("endpoint", ["default", "provider", "remote"])
@pytest.mark.parametrize("name", sorted(OTHER_PROVIDERS))
def test_anthropic_and_gemini_are_refused_before_any_network_traffic(
        wire: Wire, name: str, endpoint: str) -> None:
    base = {"default": None, "provider": OTHER_PROVIDERS[name],
            "remote": "http://192.0.2.1:8000"}[endpoint]
    params = {"api_key": FAKE_KEY, **({"api_base": base} if base else {})}
    with pytest.raises(ConfigError, match=f"{ALLOW_MODEL_REQUESTS}=0"):
        LiteLLMClient(ModelConfig(name), params).complete(HELLO, None)
    assert wire.seen == []  # LiteLLM never entered: no lookup, no connect


def test_with_the_switch_off_the_same_call_reaches_the_wire(
        wire: Wire, monkeypatch: pytest.MonkeyPatch) -> None:
    """The control: without it, the test above would pass with a spy that sees nothing."""
    monkeypatch.setenv(ALLOW_MODEL_REQUESTS, "1")
    with pytest.raises(InfraError):  # the refused lookup, as a connection error
        LiteLLMClient(ModelConfig("openai/gpt-4o-mini"), {"api_key": FAKE_KEY}).complete(
            HELLO, None)
    assert ("litellm.completion", "openai/gpt-4o-mini") in wire.seen
    assert ("getaddrinfo", "api.openai.com") in wire.seen


def test_the_in_process_reference_models_still_run(wire: Wire, tmp_path: Path) -> None:
    config = SweepConfig(suites=[MEETING_SUITE], scenarios=["V1"], memory_modes=["chat"],
                         repeats=1, run_id="switch", models=["reference/golden"],
                         warehouse=tmp_path / "warehouse")
    (spec,) = plan(config).pending
    result = run_trial(spec, RunContext("switch", "test"))
    assert result.status == "complete" and result.trial.passed is True
    assert wire.seen == []  # answered in this process: neither LiteLLM nor the network saw it


@pytest.fixture(scope="module")
def server() -> Iterator[ServerHandle]:
    with start_server() as handle:
        yield handle


def test_an_openai_compatible_server_on_loopback_still_answers(
        server: ServerHandle, monkeypatch: pytest.MonkeyPatch) -> None:
    """The local models and the reference server are reached this way."""
    monkeypatch.setenv(ALLOW_MODEL_REQUESTS, "0")
    params = {"api_base": server.api_base, "api_key": "no-key",
              "extra_body": {SCRIPT_KEY: SCRIPT}}
    reply = LiteLLMClient(ModelConfig("openai/golden"), params).complete(HELLO, None)
    assert [call.name for call in reply.tool_calls] == ["search_rooms"]


@pytest.mark.parametrize("wire_format", ["anthropic", "gemini"])
def test_an_anthropic_or_gemini_server_on_loopback_still_answers(
        wire_format: WireName, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference server in the other wire formats, through LiteLLM's own provider paths."""
    monkeypatch.setenv(ALLOW_MODEL_REQUESTS, "0")
    with start_server(wire=wire_format) as handle:
        params = {"api_base": handle.api_base, "api_key": "no-key",
                  "extra_body": {SCRIPT_KEY: SCRIPT}}
        reply = LiteLLMClient(ModelConfig(f"{wire_format}/golden"), params).complete(HELLO, None)
    assert [call.name for call in reply.tool_calls] == ["search_rooms"]


@pytest.mark.parametrize("model", ["openai/x", "anthropic/x", "gemini/x"])
@pytest.mark.parametrize("base", ["http://localhost:9/v1", "http://127.0.0.2:9/v1",
                                  "http://[::1]:9/v1"])
def test_any_loopback_address_is_allowed(base: str, model: str,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Allowed means sent: port 9 refuses, an infrastructure error, not the switch's."""
    monkeypatch.setenv(ALLOW_MODEL_REQUESTS, "0")
    client = LiteLLMClient(ModelConfig(model), {"api_base": base, "api_key": "no-key"})
    with pytest.raises(InfraError):
        client.complete(HELLO, None)


def test_ray_workers_inherit_the_switch(not_live: None, ray_local: Any) -> None:
    def refusal_on_the_worker() -> str:  # nested: shipped by value, the test module stays here
        try:
            refuse_if_forbidden(SimpleNamespace(custom_provider_map=[]), "openai/gpt-4o-mini",
                                {})
        except ConfigError as exc:
            return str(exc)
        return "allowed"

    refusal = ray_local.get(ray_local.remote(refusal_on_the_worker).remote(), timeout=120)
    assert f"{ALLOW_MODEL_REQUESTS}=0" in refusal


@pytest.mark.slow
def test_a_sweep_on_ray_records_the_refusal_as_a_config_error(
        not_live: None, ray_local: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)  # the driver's preflight wants a key
    config = SweepConfig(suites=[MEETING_SUITE], scenarios=["V1"], memory_modes=["chat"],
                         repeats=1, run_id="forbidden", models=["openai/gpt-4o-mini"],
                         warehouse=tmp_path / "warehouse")
    execute_plan(config, plan(config))
    rows = run_sql(tmp_path / "warehouse",
                   "select status, error_kind, error_message, node_id from trials").rows
    ((status, kind, message, node),) = rows
    assert (status, kind) == ("incomplete", "config_error")
    assert f"{ALLOW_MODEL_REQUESTS}=0" in message
    assert node  # on a Ray worker, which had the switch from the environment


@pytest.mark.live
def test_live_turns_the_switch_off() -> None:
    assert os.environ[ALLOW_MODEL_REQUESTS] == "1"


def test_pytest_live_turns_the_switch_off() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_"))}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--live", "-q", "-p", "no:cacheprovider",
         f"{Path(__file__).relative_to(REPO)}::test_live_turns_the_switch_off"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout + done.stderr
