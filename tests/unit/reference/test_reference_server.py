"""The reference HTTP server, reached through LiteLLM's real OpenAI-compatible client path.

Everything talks to 127.0.0.1 only. Faults are real: status codes, Retry-After headers, a
server that hangs, a socket closed without an answer, a port nothing listens on.
"""

from __future__ import annotations

import http.client
import json
import random
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline.catalog import Scenario, load_domain, load_suite
from pipeline.environment.sandbox import Sandbox
from pipeline.errors import InfraError
from pipeline.models.client import LiteLLMClient, classify, litellm_module
from pipeline.models.faults import FaultProfile
from pipeline.models.providers import provider_named
from pipeline.reference.reference import SCRIPT_KEY, golden_script, reference_call_params
from pipeline.reference.server import (
    FAULTS_HEADER,
    SERVED_VERSION,
    ServerHandle,
    chat_completion,
    start_server,
)
from pipeline.sweep.grid import ModelConfig
from pipeline.trace import Trace
from pipeline.trial.agent import Agent

SUITE = (Path(__file__).resolve().parents[3] / "catalogs" / "meeting_rooms" / "suites"
         / "intent_change.jsonl")
API_KEY = "sk-test-not-a-real-key"
SCRIPT = {"turns": [{"actions": [
    {"call": {"name": "search_rooms", "arguments": {"capacity": 6, "features": ["экран"]}}},
    {"reply": "amber is free at 15:00."}]}]}
USER = [{"role": "system", "content": "You book rooms."},
        {"role": "user", "content": "Find a room for six people, please."}]


@pytest.fixture(scope="module")
def litellm() -> Any:
    return litellm_module()


@pytest.fixture(scope="module")
def server() -> Iterator[ServerHandle]:
    with start_server() as handle:
        yield handle


def complete(litellm: Any, api_base: str, messages: list[dict[str, Any]] | None = None,
             **kwargs: Any) -> Any:
    return litellm.completion(model="openai/golden", messages=messages or USER,
                              api_base=api_base, api_key=API_KEY, num_retries=0,
                              extra_body={SCRIPT_KEY: SCRIPT}, **kwargs)


def infra_error(litellm: Any, api_base: str, **kwargs: Any) -> InfraError:
    with pytest.raises(Exception) as caught:
        complete(litellm, api_base, **kwargs)
    error = classify(litellm, caught.value)
    assert isinstance(error, InfraError), f"not classified: {caught.value!r}"
    return error


# --- the answers ------------------------------------------------------------------------------

def test_tool_call_then_reply(litellm: Any, server: ServerHandle) -> None:
    first = complete(litellm, server.api_base)
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    (call,) = choice.message.tool_calls
    assert call.function.name == "search_rooms"
    assert json.loads(call.function.arguments) == {"capacity": 6, "features": ["экран"]}
    assert first.model == f"golden-{SERVED_VERSION}"
    assert isinstance(first.usage.prompt_tokens, int) and first.usage.prompt_tokens > 0
    assert first.usage.completion_tokens > 0
    assert first.usage.total_tokens == first.usage.prompt_tokens + first.usage.completion_tokens

    history: list[dict[str, Any]] = [*USER,
               {"role": "assistant", "content": None, "tool_calls": [
                   {"id": call.id, "type": "function",
                    "function": {"name": "search_rooms", "arguments": call.function.arguments}}]},
               {"role": "tool", "tool_call_id": call.id, "content": '{"rooms": ["amber"]}'}]
    second = complete(litellm, server.api_base, messages=history)
    assert second.choices[0].finish_reason == "stop"
    assert second.choices[0].message.content == "amber is free at 15:00."
    assert not second.choices[0].message.tool_calls
    assert second.usage.prompt_tokens > first.usage.prompt_tokens


def test_usage_is_deterministic_word_count() -> None:
    body = {"model": "golden", "messages": USER, SCRIPT_KEY: SCRIPT}
    first = chat_completion(body, created=0)
    assert first == chat_completion(body, created=0)
    # roles count as words: "system You book rooms." + "user Find a room for six people, please."
    assert first["usage"]["prompt_tokens"] == 4 + 8


def test_script_past_its_end_is_a_harness_error(litellm: Any, server: ServerHandle) -> None:
    """A 400 for a broken script: our harness's fault, so never counted against the agent."""
    done = [*USER, {"role": "assistant", "content": "a"}, {"role": "assistant", "content": "b"}]
    with pytest.raises(litellm.BadRequestError) as caught:
        complete(litellm, server.api_base, messages=done)
    classified = classify(litellm, caught.value, provider_named("reference-http"))
    assert isinstance(classified, InfraError) and classified.kind == "harness_error"


def test_models_and_health(server: ServerHandle) -> None:
    assert _get(server.port, "/health") == (200, {"status": "ok"})
    status, models = _get(server.port, "/v1/models")
    served = [m["id"] for m in models["data"]]
    assert status == 200 and "golden" in served and "mutant-stale-value" in served


# --- faults -----------------------------------------------------------------------------------

def test_rate_limit_with_retry_after(litellm: Any) -> None:
    with start_server(faults=FaultProfile(rate_limit=1.0, retry_after_s=0.25)) as handle:
        error = infra_error(litellm, handle.api_base)
    assert error.kind == "rate_limit"
    assert error.retry_after_s == 0.25
    assert handle.counts == {"rate_limit": 1}  # no retry hidden inside the client


def test_server_error(litellm: Any) -> None:
    with start_server(faults=FaultProfile(server_error=1.0)) as handle:
        assert infra_error(litellm, handle.api_base).kind == "server_error"


def test_nothing_listening(litellm: Any) -> None:
    with socket.socket() as probe:  # a port that was free a moment ago, now closed again
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert infra_error(litellm, f"http://127.0.0.1:{port}/v1").kind == "connection"


def test_timeout(litellm: Any) -> None:
    with start_server(faults=FaultProfile(timeout=1.0, timeout_sleep_s=10)) as handle:
        assert infra_error(litellm, handle.api_base, timeout=0.3).kind == "timeout"


def test_connection_drop(litellm: Any) -> None:
    with start_server(faults=FaultProfile(connection_drop=1.0)) as handle:
        assert infra_error(litellm, handle.api_base).kind == "connection"


def test_faults_per_request_header(litellm: Any, server: ServerHandle) -> None:
    header = FaultProfile(server_error=1.0).model_dump_json()
    error = infra_error(litellm, server.api_base, extra_headers={FAULTS_HEADER: header})
    assert error.kind == "server_error"
    # A bad profile is a 400 that stays a 400: LiteLLM maps any error text saying "rate
    # limit" to RateLimitError, so the server spells that field "429-rate" in its errors.
    with pytest.raises(litellm.BadRequestError, match="429-rate: Input should be less") as bad:
        complete(litellm, server.api_base, extra_headers={FAULTS_HEADER: '{"rate_limit": 2}'})
    assert not isinstance(classify(litellm, bad.value), InfraError)
    assert complete(litellm, server.api_base).choices[0].finish_reason == "tool_calls"


def test_seeded_fault_sequence_is_reproducible() -> None:
    profile = FaultProfile(rate_limit=0.2, server_error=0.3)
    rng = random.Random(7)
    expected = [profile.decide(rng).kind for _ in range(20)]
    status_of = {"none": 200, "rate_limit": 429, "server_error": 500}
    for _ in range(2):
        with start_server(faults=profile, seed=7) as handle:
            statuses = [_post_chat(handle.port) for _ in range(20)]
        assert statuses == [status_of[k] for k in expected]
    assert len(set(statuses)) == 3


# --- the profile ------------------------------------------------------------------------------

def test_profile_rates_must_sum_to_at_most_one() -> None:
    with pytest.raises(ValueError, match="sum to 1.2"):
        FaultProfile(rate_limit=0.7, connection_drop=0.5)
    with pytest.raises(ValueError):
        FaultProfile(timeout=1.5)
    with pytest.raises(ValueError):
        FaultProfile.model_validate({"rate_limt": 0.1})
    FaultProfile(rate_limit=0.25, server_error=0.25, timeout=0.25, connection_drop=0.25)
    with pytest.raises(ValueError, match=r"sum to 1.1 \(overloaded 0.6 \+ context_length 0.5\)"):
        FaultProfile(overloaded=0.6, context_length=0.5)


def test_new_fault_kinds_leave_the_earlier_draws_alone() -> None:
    """Overload and context-length faults draw after the others: a profile without them
    decides exactly as before they existed."""
    old = FaultProfile(rate_limit=0.2, server_error=0.3)
    new = FaultProfile(rate_limit=0.2, server_error=0.3, overloaded=0.1, context_length=0.1)
    first, second = random.Random(3), random.Random(3)
    pairs = [(old.decide(first).kind, new.decide(second).kind) for _ in range(500)]
    assert all(a == b for a, b in pairs if b not in ("overloaded", "context_length"))
    assert {b for _, b in pairs} == {"none", "rate_limit", "server_error", "overloaded",
                                     "context_length"}


def test_profile_latency_and_rates() -> None:
    profile = FaultProfile(latency_ms=10, latency_jitter_ms=4, timeout=0.5)
    rng = random.Random(1)
    decisions = [profile.decide(rng) for _ in range(2000)]
    assert all(0.006 <= d.delay_s <= 0.014 for d in decisions)
    share = sum(d.kind == "timeout" for d in decisions) / len(decisions)
    assert 0.45 < share < 0.55
    assert {d.kind for d in decisions} == {"none", "timeout"}


# --- a whole scenario through the agent -------------------------------------------------------

def _run(client: LiteLLMClient, scenario: Scenario) -> Trace:
    domain = load_domain(scenario.domain)
    agent = Agent(model=client, system_prompt="You book meeting rooms.",
                  tools=domain.openai_tools(), sandbox=Sandbox(domain))
    trace = Trace()
    agent.run([t.user for t in scenario.turns], trace)
    return trace


def _actions(trace: Trace) -> list[tuple[Any, ...]]:
    return [tuple(e.row()[k] for k in ("kind", "tool_name", "arguments", "content", "result"))
            for e in trace.events]


def test_scenario_over_http_matches_in_process_golden(server: ServerHandle) -> None:
    suite = load_suite(SUITE)
    for loaded in suite.scenarios:
        scenario = loaded.scenario
        params = {"api_base": server.api_base, "api_key": API_KEY,
                  "extra_body": {SCRIPT_KEY: golden_script(scenario)}}
        trace = _run(LiteLLMClient(ModelConfig(name="openai/golden"), params), scenario)
        assert trace.usage.input_tokens and trace.usage.output_tokens, scenario.id
        assert trace.usage.model_version == f"golden-{SERVED_VERSION}"
        replies = [e for e in trace.events if e.kind == "assistant_message"]
        assert all(e.input_tokens and e.output_tokens for e in replies)

        golden = ModelConfig(name="reference/golden")
        in_process = _run(LiteLLMClient(golden, reference_call_params("metadata", scenario)),
                          scenario)
        assert in_process.usage.input_tokens is None  # the in-process model reports no usage
        assert _actions(trace) == _actions(in_process), scenario.id


# --- helpers: raw HTTP with the stdlib (no proxies, loopback only) ----------------------------

def _get(port: int, path: str) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def _post_chat(port: int) -> int:
    body = json.dumps({"model": "golden", "messages": USER, SCRIPT_KEY: SCRIPT})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("POST", "/v1/chat/completions", body,
                     {"Content-Type": "application/json"})
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def test_a_burst_of_connections_is_not_dropped() -> None:
    """The listen backlog holds a burst (it was 5: 5 of 102 trials failed on a quiet server)."""
    import threading
    import urllib.request

    from pipeline.reference.server import start_server

    handle = start_server()
    failures: list[BaseException] = []

    def hit() -> None:
        try:
            with urllib.request.urlopen(handle.api_base.removesuffix("/v1") + "/health",
                                        timeout=30) as reply:
                assert reply.status == 200
        except BaseException as exc:  # collected: the assertion below names them
            failures.append(exc)

    import shutil
    import subprocess

    threads = [threading.Thread(target=hit) for _ in range(150)]
    try:
        listening = subprocess.run(["ss", "-ltnH", f"sport = :{handle.server.port}"],
                                   capture_output=True, text=True, check=True).stdout.split()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        handle.stop()
    assert failures == []
    assert shutil.which("ss") and int(listening[2]) >= 128  # the kernel's backlog (Send-Q)
