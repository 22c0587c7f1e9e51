"""Scripts registered with the reference server once, named by id in each request."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any

import pytest

from pipeline.errors import InfraError
from pipeline.models.client import LiteLLMClient
from pipeline.models.config import ModelConfig
from pipeline.reference.reference import SCRIPT_ERROR_TYPE, SCRIPT_KEY
from pipeline.reference.scripts import (
    SCRIPT_ID_KEY,
    SCRIPTS_PATH,
    ScriptRegistrar,
    ScriptStore,
    register,
    script_id,
)
from pipeline.reference.server import ServerHandle, start_server
from pipeline.reference.wire import WIRE_NAMES

SCRIPT = {"turns": [{"actions": [
    {"call": {"name": "search_rooms", "arguments": {"capacity": 6}}},
    {"reply": "amber is free at 15:00."}]}]}
USER = [{"role": "system", "content": "You book rooms."},
        {"role": "user", "content": "Find a room for six people, please."}]
PROVIDER = {"openai": "reference-http", "anthropic": "reference-anthropic",
            "gemini": "reference-gemini"}


@pytest.fixture(scope="module", params=WIRE_NAMES)
def server(request: pytest.FixtureRequest) -> Iterator[ServerHandle]:
    with start_server(wire=request.param) as handle:
        yield handle


def _post(port: int, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def test_a_script_s_id_is_a_digest_of_its_content() -> None:
    reordered = {"turns": [{"actions": SCRIPT["turns"][0]["actions"]}]}
    assert script_id(SCRIPT) == script_id(json.loads(json.dumps(reordered)))
    assert script_id(SCRIPT) != script_id({"turns": []})


def test_the_store_forgets_the_least_recently_used() -> None:
    store = ScriptStore(kept=2)
    first, second = store.add({"a": 1}), store.add({"b": 2})
    assert store.get(first) == {"a": 1}  # now the most recent
    store.add({"c": 3})
    assert store.get(second) is None and store.get(first) == {"a": 1} and len(store) == 2


def test_a_reference_model_s_requests_name_their_script_by_id(server: ServerHandle) -> None:
    """The trial's client registers the script once; its calls carry the id, not the script,
    and are answered as if they carried it."""
    config = ModelConfig(f"{PROVIDER[server.wire]}/golden")
    client = LiteLLMClient(config, {"api_base": server.api_base,
                                    "extra_body": {SCRIPT_KEY: SCRIPT}})
    reply = client.complete(USER, None)
    assert client.options.extra_body == {SCRIPT_ID_KEY: script_id(SCRIPT)}
    assert [c.name for c in reply.tool_calls] == ["search_rooms"]
    assert server.server.scripts.get(script_id(SCRIPT)) == SCRIPT


def test_an_unknown_id_is_a_harness_error(server: ServerHandle) -> None:
    if server.wire != "openai":
        pytest.skip("the refusal's spelling per wire is tested with broken scripts")
    status, body = _post(server.port, "/v1/chat/completions",
                         {"model": "golden", "messages": USER, SCRIPT_ID_KEY: "0" * 24})
    assert status == 400 and body["error"]["type"] == SCRIPT_ERROR_TYPE


def test_registering_answers_the_id_and_refuses_what_is_not_a_script(
        server: ServerHandle) -> None:
    assert register(server.api_base, SCRIPT) == script_id(SCRIPT)
    status, _ = _post(server.port, SCRIPTS_PATH, [1, 2])  # type: ignore[arg-type]
    assert status == 400


def test_with_no_server_to_register_with_the_script_stays_in_the_body() -> None:
    options = {"api_base": "http://127.0.0.1:9/v1", "extra_body": {SCRIPT_KEY: SCRIPT}}
    assert ScriptRegistrar().lean(options) == options
    assert ScriptRegistrar().lean({"extra_body": {SCRIPT_KEY: SCRIPT}}) == {
        "extra_body": {SCRIPT_KEY: SCRIPT}}


def test_a_restarted_server_costs_one_harness_error_then_scripts_are_registered_again(
        ) -> None:
    def call(api_base: str) -> Any:
        client = LiteLLMClient(ModelConfig("reference-http/golden"),
                               {"api_base": api_base, "extra_body": {SCRIPT_KEY: SCRIPT}})
        return client.complete(USER, None)

    first = start_server()
    port = first.port
    with first:
        call(first.api_base)
    with start_server(port=port) as restarted:  # the same address, no scripts
        with pytest.raises(InfraError) as caught:
            call(restarted.api_base)
        assert caught.value.kind == "harness_error"
        assert [c.name for c in call(restarted.api_base).tool_calls] == ["search_rooms"]
