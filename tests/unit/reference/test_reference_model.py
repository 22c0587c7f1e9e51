"""The offline reference model, called through LiteLLM (its custom handler), answers exactly as a
provider would."""

from __future__ import annotations

import json

import pytest
from conftest import MEETING_SUITE

from pipeline.catalog import load_suite
from pipeline.errors import InfraError
from pipeline.models.client import LiteLLMClient, classify, litellm_module
from pipeline.models.providers import provider_named
from pipeline.reference.reference import golden_script, reference_call_params
from pipeline.sweep.grid import ModelConfig


def _scenario(scenario_id: str):  # type: ignore[no-untyped-def]
    suite = load_suite(MEETING_SUITE)
    return next(s.scenario for s in suite.scenarios if s.scenario.id == scenario_id)


def test_replays_golden_tool_call_then_reply_through_litellm(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.reference.provider import InProcessReference

    monkeypatch.setattr(InProcessReference, "answers_in_process", False)
    scenario = _scenario("V1")
    client = LiteLLMClient(ModelConfig("reference/golden"),
                           reference_call_params("metadata", scenario))
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u1"}]
    first = client.complete(messages, None)
    assert first.finish_reason == "tool_calls"
    assert [c.name for c in first.tool_calls] == ["search_rooms"]
    assert json.loads(first.tool_calls[0].arguments)["capacity"] == 12
    assert (first.input_tokens, first.output_tokens, first.model_version) == (None, None, None)
    messages += [first.assistant_message(),
                 {"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "{}"}]
    second = client.complete(messages, None)
    assert second.finish_reason == "stop"
    assert second.content == golden_script(scenario)["turns"][0]["actions"][1]["reply"]
    messages += [second.assistant_message(), {"role": "user", "content": "u2"}]
    third = client.complete(messages, None)
    assert json.loads(third.tool_calls[0].arguments)["capacity"] == 6


def test_provider_is_registered_explicitly_and_refuses_without_script() -> None:
    litellm = litellm_module()
    assert [p["provider"] for p in litellm.custom_provider_map].count("reference") == 1
    with pytest.raises(Exception) as caught:
        litellm.completion(model="reference/golden",
                           messages=[{"role": "user", "content": "x"}])
    assert "no script" in str(caught.value)
    classified = classify(litellm, caught.value, provider_named("reference"))
    assert isinstance(classified, InfraError) and classified.kind == "harness_error"


def test_unknown_reference_variant_is_refused() -> None:
    from pipeline.models.providers import resolve_route

    for name in ("reference/nonsense", "reference-http/goldne"):
        with pytest.raises(ValueError, match="unknown reference model"):
            resolve_route(name)
    assert resolve_route("reference-http/golden").litellm_model == "openai/golden"
