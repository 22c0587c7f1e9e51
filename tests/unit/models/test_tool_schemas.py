"""LiteLLM's tool-schema sanitising remembered per tool list (``pipeline.models.tool_schemas``):
the same answer as the step itself for every list, never one list's answer for another, and
never an object one call could change under the next."""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

import pytest

from pipeline.models import tool_schemas
from pipeline.models.tool_schemas import SANITISING_STEP, sanitising_once

BAD = r"\p{L}+"
"""A pattern Python's ``re`` cannot compile: the step drops it."""
PARAMS = {"custom_llm_provider": "openai", "api_base": "http://127.0.0.1:9/v1"}


def tool(name: str, pattern: str | None = None, **extra: Any) -> dict[str, Any]:
    prop: dict[str, Any] = {"type": "string", **extra}
    if pattern is not None:
        prop["pattern"] = pattern
    return {"type": "function", "function": {"name": name, "parameters": {
        "type": "object", "properties": {"room": prop}}}}


class FakeConfig:
    """A provider config whose step drops ``BAD`` patterns, as LiteLLM's OpenAI one does, and
    counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def _sanitized_tools_update_for_openai(self, optional_params: Mapping[str, Any],
                                           litellm_params: Mapping[str, Any]
                                           ) -> Mapping[str, Any]:
        self.calls += 1
        tools = optional_params.get("tools")
        if not isinstance(tools, list) or litellm_params.get("custom_llm_provider") != "openai":
            return MappingProxyType({})
        return MappingProxyType({"tools": [self._sanitised(t) for t in tools]})

    @staticmethod
    def _sanitised(given: dict[str, Any]) -> dict[str, Any]:
        prop = given["function"]["parameters"]["properties"]["room"]
        if prop.get("pattern") != BAD:
            return given
        rewritten = copy.deepcopy(given)
        del rewritten["function"]["parameters"]["properties"]["room"]["pattern"]
        return rewritten


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    tool_schemas.forget()
    yield
    tool_schemas.forget()


def step_of(config: Any) -> Any:
    return getattr(config, SANITISING_STEP)


def test_the_answer_is_the_steps_and_the_step_runs_once_per_list() -> None:
    config = FakeConfig()
    once = sanitising_once(config)
    tools = [tool("search", "[0-9]+"), tool("reserve", BAD)]
    first = step_of(once)({"tools": tools}, PARAMS)
    again = step_of(once)({"tools": copy.deepcopy(tools)}, PARAMS)
    expected = FakeConfig()._sanitized_tools_update_for_openai({"tools": tools}, PARAMS)
    assert dict(first) == dict(again) == dict(expected)
    assert "pattern" not in first["tools"][1]["function"]["parameters"]["properties"]["room"]
    assert once.calls == 1 and config.calls == 0  # the copy's step ran, once


def test_a_kept_tool_is_the_callers_own_object_and_a_rewrite_a_fresh_copy() -> None:
    once = sanitising_once(FakeConfig())
    tools = [tool("search"), tool("reserve", BAD)]
    step_of(once)({"tools": tools}, PARAMS)
    first = step_of(once)({"tools": tools}, PARAMS)
    assert first["tools"][0] is tools[0]
    first["tools"][1]["function"]["name"] = "changed by a callee"
    second = step_of(once)({"tools": tools}, PARAMS)
    assert second["tools"][1]["function"]["name"] == "reserve"
    assert second["tools"][1] is not first["tools"][1]


@pytest.mark.parametrize("other", [
    [tool("search", "[0-9]+"), tool("reserve", "[a-z]+")],  # one value differs, deep inside
    [tool("reserve", BAD), tool("search", "[0-9]+")],  # the same tools, another order
    [tool("search", "[0-9]+"), tool("reserve", BAD)],  # one key fewer
    [tool("search", "[0-9]+"), tool("reserve", BAD, maxLength=1.0)],  # 1.0 is not 1
    [tool("search", "[0-9]+"), tool("reserve", BAD, maxLength=True)],  # nor is True
    [tool("search", "[0-9]+")],  # one tool fewer
])
def test_different_lists_never_share_an_answer(other: list[dict[str, Any]]) -> None:
    once = sanitising_once(FakeConfig())
    tools = [tool("search", "[0-9]+"), tool("reserve", BAD, maxLength=1)]
    step_of(once)({"tools": tools}, PARAMS)
    got = step_of(once)({"tools": other}, PARAMS)
    assert once.calls == 2
    assert dict(got) == dict(FakeConfig()._sanitized_tools_update_for_openai(
        {"tools": other}, PARAMS))
    for new, old in zip(got["tools"], other, strict=True):
        assert new == FakeConfig._sanitised(old)
        assert type(new["function"]["parameters"]["properties"]["room"].get("maxLength")) is (
            type(old["function"]["parameters"]["properties"]["room"].get("maxLength")))


def test_a_list_changed_in_place_is_read_again() -> None:
    once = sanitising_once(FakeConfig())
    tools = [tool("search", BAD)]
    assert "pattern" not in step_of(once)({"tools": tools}, PARAMS)["tools"][0][
        "function"]["parameters"]["properties"]["room"]
    tools[0]["function"]["parameters"]["properties"]["room"]["pattern"] = "[0-9]+"
    got = step_of(once)({"tools": tools}, PARAMS)
    assert got["tools"][0] is tools[0] and once.calls == 2


def test_the_provider_and_api_base_are_part_of_the_key() -> None:
    once = sanitising_once(FakeConfig())
    tools = [tool("reserve", BAD)]
    step_of(once)({"tools": tools}, PARAMS)
    other_provider = step_of(once)({"tools": tools}, {**PARAMS, "custom_llm_provider": "x"})
    step_of(once)({"tools": tools}, {**PARAMS, "api_base": "https://api.openai.com/v1"})
    assert dict(other_provider) == {} and once.calls == 3


def test_what_cannot_be_keyed_goes_to_the_step_each_time() -> None:
    once = sanitising_once(FakeConfig())
    unpicklable = [{**tool("search"), "lock": threading.Lock()}]
    for _ in range(2):
        step_of(once)({"tools": unpicklable}, PARAMS)
        step_of(once)({}, PARAMS)
    assert once.calls == 4


def test_a_config_without_the_step_is_left_alone() -> None:
    config = object()
    assert sanitising_once(config) is config


@pytest.mark.slow
def test_litellms_own_step_gives_the_same_requests() -> None:
    """LiteLLM's OpenAI config, on a loopback proxy and on api.openai.com: the request
    ``transform_request`` builds is the same with the step remembered."""
    from pipeline.models.client import litellm_module

    litellm = litellm_module()
    tools = [tool("search", "[0-9]+"), tool("reserve", BAD),
             {"type": "function", "function": {"name": "pick", "parameters": {
                 "anyOf": [{"type": "object"}, {"type": "string"}]}}}]
    messages = [{"role": "user", "content": "a room"}]
    for api_base in ("http://127.0.0.1:9/v1", "https://api.openai.com/v1"):
        params = {"custom_llm_provider": "openai", "api_base": api_base}
        plain = litellm.ProviderConfigManager.get_provider_chat_config(
            model="gpt-4o", provider=litellm.LlmProviders("openai"))
        once = sanitising_once(litellm.ProviderConfigManager.get_provider_chat_config(
            model="gpt-4o", provider=litellm.LlmProviders("openai")))
        for _ in range(2):
            sent = [config.transform_request(
                model="gpt-4o", messages=copy.deepcopy(messages),
                optional_params={"tools": copy.deepcopy(tools)}, litellm_params=dict(params),
                headers={}) for config in (plain, once)]
            assert sent[0] == sent[1]
