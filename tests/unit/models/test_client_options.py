"""A client's call options: merged once per client, fresh per call where the call tag goes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from pipeline.models import client as client_module
from pipeline.models.client import LiteLLMClient
from pipeline.models.config import ModelConfig
from pipeline.models.providers import provider_named
from pipeline.models.routes import CALL_TAG_KEY, ModelRoute
from pipeline.reference.reference import SCRIPT_KEY

SCRIPT = {"turns": [{"actions": [{"reply": "done."}, {"reply": "done again."}]}]}
USER = [{"role": "user", "content": "Book it."}]


def test_a_client_resolves_and_merges_its_options_once(monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    resolved: list[str] = []
    real = client_module.resolve_route

    def counting(model: str) -> ModelRoute:
        resolved.append(model)
        return real(model)

    monkeypatch.setattr(client_module, "resolve_route", counting)
    client = LiteLLMClient(ModelConfig("reference/golden"), {"metadata": {SCRIPT_KEY: SCRIPT}})
    for _ in range(3):
        assert client.complete(USER, None).content == "done."
    assert resolved == ["reference/golden"]


def test_each_call_gets_its_own_tag_and_leaves_the_options_alone(
        monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Mapping[str, Any]] = []
    provider = provider_named("reference")
    real = type(provider).answer

    def spying(self: Any, route: ModelRoute, messages: list[dict[str, Any]],
               options: dict[str, Any]) -> Mapping[str, Any]:
        seen.append(options)
        return real(self, route, messages, options)

    monkeypatch.setattr(type(provider), "answer", spying)
    params = {"metadata": {SCRIPT_KEY: SCRIPT}, "extra_body": {"x": 1}, "timeout": 5.0}
    client = LiteLLMClient(ModelConfig("reference/golden", temperature=0.5), params)
    client.complete(USER, [{"type": "function", "function": {"name": "f"}}], "planner", 1)
    client.complete(USER, None, "planner", 1)
    first, second = seen
    assert first["metadata"][CALL_TAG_KEY] == {"purpose": "planner", "turn": 1}
    assert first["metadata"] is not second["metadata"]
    assert first["extra_body"] is not second["extra_body"]
    assert first["extra_body"] == {"x": 1, CALL_TAG_KEY: {"purpose": "planner", "turn": 1}}
    assert "tools" in first and "tools" not in second
    assert first["temperature"] == second["temperature"] == 0.5
    assert first["timeout"] == 5.0  # as given: the in-process model sees the options unchanged
    assert params == {"metadata": {SCRIPT_KEY: SCRIPT}, "extra_body": {"x": 1}, "timeout": 5.0}
