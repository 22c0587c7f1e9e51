"""The reference models behind three wire formats, reached through LiteLLM's real provider
paths (``openai/``, ``anthropic/``, ``gemini/`` with an ``api_base`` on loopback and a dummy
key named by ``api_key_env``) and the project's unchanged LiteLLM client and trial path.

The same suite gives the same verdicts in each wire format, usage is recorded where the server
sent it and null where it did not, and each fault of the profile lands as the same attempt
kind. Everything talks to 127.0.0.1 only.
"""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import MEETING_SUITE

from pipeline.errors import ConfigError, InfraError
from pipeline.models.call_params import call_params_of
from pipeline.models.client import LiteLLMClient
from pipeline.models.config import ModelConfig
from pipeline.models.faults import FaultProfile
from pipeline.reference.reference import SCRIPT_KEY, WIRE_OF_PROVIDER, golden_script
from pipeline.reference.server import FAULTS_HEADER, SERVED_VERSION, ServerHandle, start_server
from pipeline.reference.wire import WIRE_NAMES, WireName
from pipeline.scoring.check_ids import readable_check_id
from pipeline.sweep.config import SweepConfig
from pipeline.sweep.grid import TrialSpec
from pipeline.sweep.preflight import check_reach
from pipeline.sweep.stages import plan
from pipeline.trial.run import RunContext, TrialResult, run_trial

KEY_ENV = "AGENTSWEEP_TEST_REFERENCE_KEY"
SCRIPT = {"turns": [{"actions": [
    {"call": {"name": "search_rooms", "arguments": {"capacity": 6, "features": ["экран"]}}},
    {"reply": "amber is free at 15:00."}]}]}
USER = [{"role": "system", "content": "You book rooms."},
        {"role": "user", "content": "Find a room for six people, please."}]
TOOLS = [{"type": "function", "function": {
    "name": "search_rooms", "description": "Rooms free at a time.",
    "parameters": {"type": "object", "properties": {"capacity": {"type": "integer"}}}}}]


@pytest.fixture(scope="module", params=WIRE_NAMES)
def server(request: pytest.FixtureRequest) -> Iterator[ServerHandle]:
    with start_server(wire=request.param) as handle:
        yield handle


@pytest.fixture(autouse=True)
def dummy_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-dummy-loopback-only")


def model(wire: WireName, base: str, variant: str = "golden") -> ModelConfig:
    """How a sweep spec names a reference model behind a wire: the provider's own prefix."""
    return ModelConfig(f"{wire}/{variant}", api_base=base, api_key_env=KEY_ENV)


def client(config: ModelConfig, script: dict[str, Any] | None = None,
           **extra: Any) -> LiteLLMClient:
    """The project's client with the call options a sweep gives it (``call_params_of``) and the
    script the reference model plays."""
    params = {**call_params_of(config), "extra_body": {SCRIPT_KEY: script or SCRIPT}, **extra}
    return LiteLLMClient(config.resolved(), params)


# --- tool calls, tool results, usage, model version ------------------------------------------

CACHED_FIRST = {"openai": None, "anthropic": 0, "gemini": None}
"""Cached tokens of a dialog's first call: OpenAI's wire never reports them, Anthropic's always
does, Gemini's only when some of the prompt came from the cache."""


def test_tool_call_then_tool_result(server: ServerHandle) -> None:
    call = client(model(server.wire, server.api_base))
    first = call.complete(USER, TOOLS)
    assert first.finish_reason == "tool_calls"
    (tool_call,) = first.tool_calls
    assert (tool_call.id, tool_call.name) == ("call_1_0", "search_rooms")
    assert json.loads(tool_call.arguments) == {"capacity": 6, "features": ["экран"]}
    assert first.model_version == f"golden-{SERVED_VERSION}"

    history = [*USER, first.assistant_message(),
               {"role": "tool", "tool_call_id": tool_call.id, "content": '{"rooms": ["amber"]}'}]
    second = call.complete(history, TOOLS)
    assert (second.finish_reason, second.content, second.tool_calls) == (
        "stop", "amber is free at 15:00.", ())
    for reply in (first, second):
        assert reply.input_tokens and reply.output_tokens, server.wire
        assert reply.cost_usd is None  # the server reports none; never LiteLLM's estimate
    assert second.input_tokens > first.input_tokens  # type: ignore[operator]
    # the server's pretend cache holds the prompt the dialog's previous call sent
    assert first.cached_input_tokens == CACHED_FIRST[server.wire]
    assert second.cached_input_tokens == (None if server.wire == "openai" else first.input_tokens)
    assert server.received[-1]["model"] == "golden"


def test_what_the_server_read_is_what_the_client_sent(server: ServerHandle) -> None:
    """Generation options and the call tag arrive translated into the chat body's names."""
    config = model(server.wire, server.api_base).model_copy(
        update={"temperature": 0.4, "params": {"top_p": 0.5, "max_tokens": 300}})
    client(config).complete(USER, TOOLS, purpose="planner", turn=1)
    sent = server.received[-1]
    assert (sent["temperature"], sent["top_p"], sent["max_tokens"]) == (0.4, 0.5, 300)
    assert sent["agentsweep_call"] == {"purpose": "planner", "turn": 1}


# --- faults: each lands as the same kind in each wire format ---------------------------------

FAULTS: dict[str, tuple[FaultProfile, str]] = {
    "rate_limit": (FaultProfile(rate_limit=1.0, retry_after_s=0.25), "rate_limit"),
    "server_error": (FaultProfile(server_error=1.0), "server_error"),
    "overloaded": (FaultProfile(overloaded=1.0), "overloaded"),
    "timeout": (FaultProfile(timeout=1.0, timeout_sleep_s=10), "timeout"),
    "connection_drop": (FaultProfile(connection_drop=1.0), "connection"),
}
OVERLOAD_STATUS = {"openai": 503, "anthropic": 529, "gemini": 503}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_fault_is_the_same_infra_kind(server: ServerHandle, fault: str) -> None:
    profile, kind = FAULTS[fault]
    # only the timeout fault waits for the time limit; the others answer at once (a busy
    # machine took longer than 0.3 s for a 429 once)
    call = client(model(server.wire, server.api_base),
                  extra_headers={FAULTS_HEADER: profile.model_dump_json()},
                  timeout=0.3 if fault == "timeout" else 10)
    with pytest.raises(InfraError) as caught:
        call.complete(USER, TOOLS)
    assert caught.value.kind == kind, str(caught.value)
    assert caught.value.retry_after_s == (0.25 if fault == "rate_limit" else None)


def test_overload_is_spelled_the_wire_s_way(server: ServerHandle) -> None:
    profile = FaultProfile(overloaded=1.0).model_dump_json()
    status, body = _post(server, {FAULTS_HEADER: profile})
    assert status == OVERLOAD_STATUS[server.wire]
    if server.wire == "anthropic":
        assert body["type"] == "error" and body["error"]["type"] == "overloaded_error"
    if server.wire == "gemini":
        assert body["error"]["status"] == "UNAVAILABLE"


def test_a_context_length_400_is_the_agents_context_limit(server: ServerHandle) -> None:
    header = FaultProfile(context_length=1.0).model_dump_json()
    call = client(model(server.wire, server.api_base), extra_headers={FAULTS_HEADER: header})
    with pytest.raises(Exception) as caught:
        call.complete(USER, TOOLS)
    assert getattr(caught.value, "kind", None) == "context_limit", repr(caught.value)
    assert not isinstance(caught.value, InfraError)


def test_nothing_listening_is_a_connection_error(server: ServerHandle) -> None:
    with socket.socket() as probe:  # a port that was free a moment ago, now closed again
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base = server.api_base.replace(f":{server.port}", f":{port}")
    with pytest.raises(InfraError) as caught:
        client(model(server.wire, base)).complete(USER, TOOLS)
    assert caught.value.kind == "connection"


def test_an_unknown_model_is_a_config_error(server: ServerHandle) -> None:
    with pytest.raises(ConfigError, match="no-such-variant"):
        client(model(server.wire, server.api_base, "no-such-variant")).complete(USER, TOOLS)


# --- a small sweep: the same verdicts in every wire format ------------------------------------

VARIANTS = ("golden", "mutant-stale-value", "mutant-stale-results")


def _declared_catch(spec: TrialSpec, variant: str) -> str | None:
    """The check the scenario's catalog line says catches ``variant`` in chat mode (as
    ``agentsweep verify-suite`` reads it); None for golden."""
    catches = [readable_check_id(c.check) for c in spec.scenario.catches
               if c.mutant == variant and "chat" in c.modes]
    return catches[0] if catches else None


def _sweep(server: ServerHandle, tmp_path: Path, run_id: str, **extra: Any
           ) -> dict[str, tuple[TrialSpec, TrialResult]]:
    """Plan V1 for the variants as a sweep spec names them, run each trial as a Ray worker
    would (``run_trial`` with the driver's call options), keyed by variant."""
    models = [model(server.wire, server.api_base, v) for v in VARIANTS]
    config = SweepConfig(suites=[MEETING_SUITE], scenarios=["V1"], memory_modes=["chat"],
                         repeats=1, run_id=run_id, models=models,
                         warehouse=tmp_path / "warehouse")
    results = {}
    for spec in plan(config).pending:
        extra_body = {SCRIPT_KEY: golden_script(spec.scenario)}
        spec = replace(spec, extra={**call_params_of(spec.model), "extra_body": extra_body,
                                    **extra})
        variant = spec.model.name.split("/", 1)[1]
        results[variant] = (spec, run_trial(spec, RunContext(run_id, "test")))
    return results


def test_golden_passes_and_the_mutants_are_caught(server: ServerHandle, tmp_path: Path) -> None:
    """Scenario V1 in chat mode, as ``agentsweep verify-suite`` judges it: golden passes, each
    mutant fails first on the check the catalog declares."""
    results = _sweep(server, tmp_path, f"verdicts-{server.wire}")
    assert sorted(results) == sorted(VARIANTS)
    for variant, (spec, result) in results.items():
        row = result.trial
        assert (row.status, row.passed) == ("complete", variant == "golden"), variant
        expected = _declared_catch(spec, variant)
        assert (expected is None) == (variant == "golden")
        assert (row.first_violation_check or "").startswith(expected or ""), variant
        assert row.model_version == f"{variant}-{SERVED_VERSION}"
        assert row.input_tokens and row.output_tokens
        replies = [e for e in result.events if e.kind == "assistant_message"]
        cached = [getattr(e, "cached_input_tokens", None) for e in replies]
        assert cached[0] == CACHED_FIRST[server.wire], cached
        assert all((c is None) == (server.wire == "openai") for c in cached[1:]), cached


TRIAL_KINDS = {"rate_limit": ("incomplete", "rate_limit"),
               "server_error": ("incomplete", "server_error"),
               "overloaded": ("incomplete", "overloaded"),
               "timeout": ("incomplete", "timeout"),
               "connection_drop": ("incomplete", "connection")}


@pytest.mark.slow  # over a second (the fast tier stays under a minute)
def test_a_trial_meeting_a_fault_records_the_same_attempt_kind(
        server: ServerHandle, tmp_path: Path) -> None:
    seen = {}
    for fault in [*FAULTS, "context_length"]:
        profile = FAULTS[fault][0] if fault in FAULTS else FaultProfile(context_length=1.0)
        result = _sweep(server, tmp_path, f"{fault}-{server.wire}", timeout=0.3,
                        extra_headers={FAULTS_HEADER: profile.model_dump_json()})["golden"][1]
        seen[fault] = (result.trial.status, result.trial.error_kind)
    assert seen == {**TRIAL_KINDS, "context_length": ("limit", "context_limit")}


# --- the reference providers: reference-anthropic/, reference-gemini/ -----------------------

def test_a_sweep_names_the_served_models_by_their_reference_provider(
        server: ServerHandle, tmp_path: Path) -> None:
    """``agentsweep run --model reference-<wire>/golden --api-base ...``: the provider hands
    each trial its script; preflight passes; the trial completes through LiteLLM's path."""
    (provider,) = [p for p, w in WIRE_OF_PROVIDER.items() if w == server.wire]
    config = SweepConfig(suites=[MEETING_SUITE], scenarios=["V1"], memory_modes=["chat"],
                         repeats=1, run_id=f"provider-{server.wire}",
                         models=[ModelConfig(f"{provider}/golden", api_base=server.api_base)],
                         warehouse=tmp_path / "warehouse")
    (spec,) = plan(config).pending
    assert spec.model.route is not None
    assert spec.model.route.litellm_model == f"{server.wire}/golden"
    check_reach([spec.model])
    result = run_trial(replace(spec, extra=call_params_of(spec.model)),
                       RunContext(config.run_id, "test"))
    assert (result.trial.status, result.trial.passed) == ("complete", True)
    assert result.trial.model_version == f"golden-{SERVED_VERSION}"


def test_a_broken_script_is_a_harness_error_in_every_wire(server: ServerHandle) -> None:
    (provider,) = [p for p, w in WIRE_OF_PROVIDER.items() if w == server.wire]
    config = ModelConfig(f"{provider}/golden", api_base=server.api_base)
    past_the_end = [*USER, {"role": "assistant", "content": "done"},
                    {"role": "user", "content": "a turn the script does not have"}]
    with pytest.raises(InfraError) as caught:
        client(config).complete(past_the_end, TOOLS)
    assert caught.value.kind == "harness_error", str(caught.value)


# --- helpers: raw HTTP with the stdlib (no proxies, loopback only) ----------------------------

def _post(server: ServerHandle, headers: dict[str, str]) -> tuple[int, Any]:
    path, body = {
        "openai": ("/v1/chat/completions", {"model": "golden", "messages": USER}),
        "anthropic": ("/v1/messages", {"model": "golden", "max_tokens": 100,
                                       "messages": USER[1:]}),
        "gemini": ("/v1beta/models/golden:generateContent",
                   {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}),
    }[server.wire]
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        conn.request("POST", path, json.dumps({**body, SCRIPT_KEY: SCRIPT}),
                     {"Content-Type": "application/json", **headers})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()
