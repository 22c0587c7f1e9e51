"""The local model server with the real model: OpenAI-shaped answers, provenance, usage, errors
in OpenAI's shape, and the same code path through LiteLLM as any provider."""

from __future__ import annotations

import json
import re
import urllib.request
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from pipeline.catalog import load_domain
from pipeline.errors import AgentError
from pipeline.local.adapter import ADAPTER_ID, LOCAL_AGENT
from pipeline.local.catalog import local_model
from pipeline.models.client import LiteLLMClient
from pipeline.models.providers import resolve_route
from pipeline.sweep.grid import ModelConfig
from pipeline.trial.memory import generation_schema

pytestmark = pytest.mark.slow  # a real 1.5B model on two CPUs (the adapter tests are fast)

SHA = local_model("local/default").gguf_sha256
HELLO = [{"role": "user", "content": "Say hello in one word."}]


def _client(server: Any, **params: Any) -> LiteLLMClient:
    config = ModelConfig("local/default", temperature=0.0, seed=0,
                         params={"max_tokens": 32, **params}).resolved()
    assert config.route == resolve_route("local/default")
    return LiteLLMClient(config, {"api_base": server.api_base})


def test_health_models_and_a_completion_report_provenance_and_usage(local_server: Any) -> None:
    health = json.load(urllib.request.urlopen(local_server.api_base + "/health"))
    assert health == {"status": "ok", "model": "local/qwen2.5-coder-1.5b"}
    models = json.load(urllib.request.urlopen(local_server.api_base + "/models"))
    assert [m["id"] for m in models["data"]] == ["qwen2.5-coder-1.5b"]
    status, body = local_server.complete({"messages": HELLO, "max_tokens": 8, "seed": 0,
                                          "agentsweep_call": {"purpose": "planner"}})
    assert status == 200
    assert body["model"] == SHA
    assert body["system_fingerprint"].startswith("xllamacpp-2026.10.11549;template-sha256:")
    assert body["system_fingerprint"].endswith(f"adapter:{ADAPTER_ID};agent:{LOCAL_AGENT.name}")
    assert body["usage"]["prompt_tokens"] > 0 and body["usage"]["completion_tokens"] > 0


def test_through_litellm_the_reply_carries_the_reported_usage_and_no_cost(
        local_server: Any) -> None:
    reply = _client(local_server).complete(HELLO, None)
    assert (reply.content or "").strip()
    assert reply.model_version == SHA
    assert reply.input_tokens is not None and reply.input_tokens > 0
    assert reply.output_tokens is not None and 0 < reply.output_tokens <= 32
    assert reply.cost_usd is None  # unknown is null, never estimated
    assert reply.system_fingerprint is not None and ADAPTER_ID in reply.system_fingerprint


def test_a_tiny_token_budget_is_reported_as_a_cut_off_reply(local_server: Any) -> None:
    reply = _client(local_server, max_tokens=2).complete(
        [{"role": "user", "content": "Count from one to fifty in words."}], None)
    assert reply.finish_reason == "length"


def test_a_dialog_over_the_context_is_the_agents_context_limit(local_server: Any) -> None:
    long = [{"role": "user", "content": "слово " * 6000}]
    with pytest.raises(AgentError) as caught:
        _client(local_server).complete(long, None)
    assert caught.value.kind == "context_limit"
    assert "maximum context length" in str(caught.value)


def test_the_structured_state_comes_back_valid_against_the_schema(local_server: Any) -> None:
    schema = dict(load_domain("meeting_rooms").state_schema or {})
    request = [{"role": "system", "content": "Answer with the task state as JSON."},
               {"role": "user", "content": "Find a room for 6 people with a screen on "
                                           "2026-08-07 at 15:00; do not book."}]
    reply = _client(local_server, max_tokens=400).complete(
        request, None, purpose="state", response_schema=generation_schema(schema))
    assert reply.finish_reason == "stop"
    state = json.loads(reply.content or "")
    assert list(Draft202012Validator(schema).iter_errors(state)) == []
    assert set(state["constraints"]) == set(schema["properties"]["constraints"]["properties"])


def test_a_request_that_is_not_a_chat_is_refused_in_openais_shape(local_server: Any) -> None:
    status, body = local_server.complete({"messages": "not a list"})
    assert status == 400 and body["error"]["type"] == "invalid_request_error"


def test_a_pattern_with_digit_escapes_is_enforced_by_the_grammar(local_server: Any) -> None:
    """JSON Schema's ``\\d`` is spelled ``[0-9]`` before it reaches llama.cpp, whose grammar
    would otherwise drop the pattern and accept any string (a date in words, say)."""
    schema = {"type": "object", "additionalProperties": False, "required": ["date"],
              "properties": {"date": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"}}}
    request = [{"role": "system", "content": "Answer with JSON."},
               {"role": "user", "content": "Write the date 'the seventh of August 2026' in "
                                           "words, exactly as I wrote it."}]
    reply = _client(local_server, max_tokens=60).complete(
        request, None, purpose="state", response_schema=schema)
    assert re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", json.loads(reply.content or "")["date"])
