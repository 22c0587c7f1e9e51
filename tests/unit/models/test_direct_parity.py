"""The direct path (``pipeline.models.direct``) against ``litellm.completion``: the same calls to
the reference server in each wire format it serves give the same replies, send the same
bodies and fail as the same errors. Everything talks to 127.0.0.1 only."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from pipeline.errors import AgentError, ConfigError, InfraError
from pipeline.models.call_params import call_params_of
from pipeline.models.client import LiteLLMClient, ModelReply, litellm_module
from pipeline.models.config import ModelConfig
from pipeline.models.direct import DIRECT_PROVIDERS, direct_route, usable
from pipeline.models.faults import FaultProfile
from pipeline.reference.reference import SCRIPT_KEY, WIRE_OF_PROVIDER
from pipeline.reference.server import FAULTS_HEADER, ServerHandle, start_server
from pipeline.reference.wire import WIRE_NAMES

pytestmark = pytest.mark.slow  # LiteLLM's import and a server per wire format: ~13 s

KEY_ENV = "AGENTSWEEP_TEST_REFERENCE_KEY"
SCRIPT = {"turns": [{"actions": [
    {"call": {"name": "search_rooms", "arguments": {"capacity": 6, "features": ["экран"]}}},
    {"reply": "amber is free at 15:00."}]}]}
USER = [{"role": "system", "content": "You book rooms."},
        {"role": "user", "content": "Find a room for six people, please."}]
TOOLS = [{"type": "function", "function": {
    "name": "search_rooms", "description": "Rooms free at a time.",
    "parameters": {"type": "object", "properties": {"capacity": {"type": "integer"}}}}}]
PARAMS = {"temperature": 0.4, "params": {"top_p": 0.5, "max_tokens": 300}}


@pytest.fixture(scope="module", params=WIRE_NAMES)
def server(request: pytest.FixtureRequest) -> Iterator[ServerHandle]:
    with start_server(wire=request.param) as handle:
        yield handle


@pytest.fixture(autouse=True)
def dummy_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-dummy-loopback-only")


def clients(server: ServerHandle, base: str | None = None, name: str | None = None,
            **extra: Any) -> tuple[LiteLLMClient, LiteLLMClient]:
    """Two clients of the same model (the wire's reference provider's ``golden``, or ``name``)
    and options: through ``litellm.completion``, and direct where the wire format has a direct
    path."""
    (provider,) = [p for p, w in WIRE_OF_PROVIDER.items() if w == server.wire]
    config = ModelConfig(name or f"{provider}/golden", api_base=base or server.api_base,
                         api_key_env=KEY_ENV).model_copy(update=PARAMS)
    params = {**call_params_of(config), "extra_body": {SCRIPT_KEY: SCRIPT}, **extra}
    old = LiteLLMClient(config.resolved(), dict(params), direct=False)
    return old, LiteLLMClient(config.resolved(), dict(params))


@pytest.fixture
def wire_bodies(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any, dict[str, str]]]:
    """The URL, JSON body and provider headers of every request an ``httpx.Client`` sent
    (LiteLLM's paths and the direct path alike)."""
    import httpx

    seen: list[tuple[str, Any, dict[str, str]]] = []
    real = httpx.Client.send

    def recording(self: httpx.Client, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        headers = {k: v for k, v in request.headers.items() if k in PROVIDER_HEADERS}
        seen.append((str(request.url), json.loads(request.content), headers))
        return real(self, request, **kwargs)

    monkeypatch.setattr(httpx.Client, "send", recording)
    return seen


PROVIDER_HEADERS = ("authorization", "x-api-key", "x-goog-api-key", "anthropic-version",
                    "anthropic-beta", "content-type")
"""Headers the provider reads (the HTTP client's own, such as User-Agent, may differ)."""


def same(reply: ModelReply) -> ModelReply:
    return replace(reply, latency_ms=0.0)


def test_the_same_dialog_gives_the_same_replies_and_bodies(
        server: ServerHandle, wire_bodies: list[tuple[str, Any, dict[str, str]]]) -> None:
    old, new = clients(server)
    replies, bodies = [], []
    for client in (old, new):
        first = client.complete(USER, TOOLS, purpose="planner", turn=1)
        sent_first = server.received[-1]
        (call,) = first.tool_calls
        history = [*USER, first.assistant_message(),
                   {"role": "tool", "tool_call_id": call.id, "content": '{"rooms": ["amber"]}'}]
        second = client.complete(history, TOOLS, purpose="planner", turn=1)
        replies.append((same(first), same(second)))
        bodies.append((sent_first, server.received[-1]))
    assert replies[0] == replies[1]
    assert bodies[0] == bodies[1]
    direct_where_covered(server, new)
    assert len(wire_bodies) == 4 and wire_bodies[:2] == wire_bodies[2:]
    assert replies[1][1].content == "amber is free at 15:00."


FAULTS = {
    "rate_limit": FaultProfile(rate_limit=1.0, retry_after_s=0.25),
    "server_error": FaultProfile(server_error=1.0),
    "overloaded": FaultProfile(overloaded=1.0),
    "timeout": FaultProfile(timeout=1.0, timeout_sleep_s=10),
    "connection_drop": FaultProfile(connection_drop=1.0),
    "context_length": FaultProfile(context_length=1.0),
}


ANSWERED = ("context_length", "overloaded", "rate_limit", "server_error")
"""Faults the server answers with an error body: recorded with the same message (a timeout or
a dropped connection is worded by the HTTP client)."""


def reading(exc: BaseException) -> tuple[Any, ...]:
    """How the pipeline reads a failed call: its class, kind and Retry-After."""
    return (type(exc).__name__, getattr(exc, "kind", None),
            getattr(exc, "retry_after_s", None))


def direct_where_covered(server: ServerHandle, client: LiteLLMClient) -> None:
    """The client took the direct path if, and only if, its wire format has one."""
    assert (client._direct is not None) == (server.wire in DIRECT_PROVIDERS)


def failure(client: LiteLLMClient) -> BaseException:
    with pytest.raises((InfraError, ConfigError, AgentError)) as caught:
        client.complete(USER, TOOLS)
    return caught.value


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_fault_fails_the_same_way(server: ServerHandle, fault: str) -> None:
    header = {FAULTS_HEADER: FAULTS[fault].model_dump_json()}
    old, new = clients(server, extra_headers=header, timeout=0.3 if fault == "timeout" else 10)
    before, after = failure(old), failure(new)
    assert reading(before) == reading(after)
    if fault in ANSWERED:
        assert str(before) == str(after)
    direct_where_covered(server, new)


def test_nothing_listening_fails_the_same_way(server: ServerHandle) -> None:
    with socket.socket() as probe:  # a port that was free a moment ago, now closed again
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    old, new = clients(server, server.api_base.replace(f":{server.port}", f":{port}"))
    assert reading(failure(old)) == reading(failure(new)) == ("InfraError", "connection", None)
    direct_where_covered(server, new)


def test_an_unknown_model_fails_the_same_way(server: ServerHandle) -> None:
    old, new = clients(server, name=f"{server.wire}/no-such-variant")
    assert reading(failure(old)) == reading(failure(new)) == ("ConfigError", None, None)
    direct_where_covered(server, new)


def test_a_broken_script_fails_the_same_way(server: ServerHandle) -> None:
    past_the_end = [*USER, {"role": "assistant", "content": "done"},
                    {"role": "user", "content": "a turn the script does not have"}]
    old, new = clients(server)
    readings = []
    for client in (old, new):
        with pytest.raises(InfraError) as caught:
            client.complete(past_the_end, TOOLS)
        readings.append(reading(caught.value))
    assert readings[0] == readings[1] == (
        "InfraError", "harness_error", None)
    direct_where_covered(server, new)


def test_a_response_format_is_sent_the_same_way(server: ServerHandle) -> None:
    schema = {"type": "object", "properties": {"room": {"type": "string"}}}
    old, new = clients(server)
    sent = []
    for client in (old, new):
        route = replace(client.route, structured_output=True)
        client.model._route = route
        client.complete(USER, TOOLS, response_schema=schema)
        sent.append(json.dumps(server.received[-1], sort_keys=True))
    assert sent[0] == sent[1]
    direct_where_covered(server, new)


# --- what the direct path leaves to litellm.completion ----------------------------------------

BASE = "http://127.0.0.1:9/v1"


@pytest.mark.parametrize(("model", "options"), [
    ("openai/golden", {"api_base": BASE}),  # no key: LiteLLM looks for one
    ("openai/golden", {"api_key": "k"}),  # no api_base: LiteLLM's default endpoint
    ("gemini/golden", {"api_base": BASE, "api_key": "k"}),  # a wire without a direct path
    ("openai/golden", {"api_base": BASE, "api_key": "k", "stream": True}),
    ("openai/golden", {"api_base": BASE, "api_key": "k", "max_retries": 2}),  # SDK retries
    ("openai/golden", {"api_base": BASE, "api_key": "k", "top_k": 3}),  # not an OpenAI param
    ("openai/golden", {"api_base": BASE, "api_key": "k", "callbacks": ["x"]}),
])
def test_calls_it_does_not_cover_go_through_litellm(model: str, options: dict[str, Any]) -> None:
    litellm = litellm_module()
    assert direct_route(litellm, model, options, {}) is None
    assert direct_route(litellm, "openai/golden", {"api_base": BASE, "api_key": "k"}, {})


@pytest.mark.parametrize(("setting", "value"), [
    ("success_callback", [lambda *args: None]),
    ("api_base", "http://127.0.0.1:9/v1"),
    ("headers", {"x-team": "a"}),
    ("client_session", "a user's own client"),
])
def test_a_litellm_setting_made_later_sends_calls_through_litellm(
        monkeypatch: pytest.MonkeyPatch, setting: str, value: Any) -> None:
    litellm = litellm_module()
    assert usable(litellm)
    monkeypatch.setattr(litellm, setting, value)
    assert not usable(litellm)
