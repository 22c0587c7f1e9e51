"""The provider registry: explicit, lazy, no duplicate names; built-ins register like a plugin,
and the trial path only ever asks the registry (it never names a provider)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from conftest import MEETING_SUITE, REPO
from helpers.sources import parsed

from pipeline.catalog import Domain, Scenario, load_suites
from pipeline.errors import ConfigError, InfraError
from pipeline.models import providers
from pipeline.models.client import LiteLLMClient, classify, litellm_module
from pipeline.models.config import ModelConfig
from pipeline.models.provider_keys import KEYS_OF_PROVIDER, missing_key
from pipeline.models.providers import (
    ModelProvider,
    provider_for,
    provider_named,
    provider_of,
    register_provider,
    registered_providers,
    resolve_route,
)
from pipeline.models.routes import ModelRoute
from pipeline.sweep.grid import expand
from pipeline.trial.run import model_client_for

TRIAL_PATH = ["trial/run.py", "models/client.py", "trial/agent.py", "trial/memory.py",
              "execution/executor.py", "execution/concurrency.py", "models/call_params.py",
              "models/config.py", "sweep/preflight.py", "models/providers.py", "sweep/stages.py",
              "sweep/config.py"]


class EchoProvider(ModelProvider):
    """A plugin: its models are LiteLLM's ``openai/<name>``, each trial tagged by scenario."""

    built = 0

    def __init__(self) -> None:
        EchoProvider.built += 1

    def route(self, model: str) -> ModelRoute:
        return ModelRoute(f"openai/{model.partition('/')[2]}", {"api_key": "no-key"})

    def trial_params(self, route: ModelRoute, scenario: Scenario,
                     domain: Domain) -> dict[str, Any]:
        return {"extra_body": {"scenario": scenario.id, "domain": domain.name}}

    def classify(self, exc: BaseException, message: str) -> Exception | None:
        return InfraError("overloaded", message) if "busy" in str(exc) else None


def test_built_ins_are_registered_and_names_are_never_taken_twice() -> None:
    assert {"reference", "reference-http", "local"} <= set(registered_providers())
    for name in ("reference", "reference-http", "local"):
        with pytest.raises(ValueError, match="already registered"):
            register_provider(name, EchoProvider)
    with pytest.raises(ValueError, match="prefix"):
        register_provider("a/b", EchoProvider)


@pytest.fixture
def own_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Registrations of a test end with it (the process's registry is left as it was)."""
    registered_providers()  # the built-ins, in the copy too
    monkeypatch.setattr(providers, "_factories", dict(providers._factories))
    monkeypatch.setattr(providers, "_instances", dict(providers._instances))


def test_a_plugin_is_lazy_and_adapts_its_models_like_a_built_in(own_registry: None) -> None:
    register_provider("test-echo", EchoProvider)
    with pytest.raises(ValueError, match="already registered"):
        register_provider("test-echo", "tests:nothing")
    assert EchoProvider.built == 0  # nothing built until a model of it is looked up
    assert resolve_route("test-echo/small").litellm_model == "openai/small"
    assert isinstance(provider_for("test-echo/small"), EchoProvider)
    assert provider_for("test-echo/other") is provider_for("test-echo/small")
    assert EchoProvider.built == 1
    model = ModelConfig("test-echo/small", temperature=0.4).resolved()
    spec = next(expand(load_suites([MEETING_SUITE]), [model], ["default"], ["chat"], 1))
    client = model_client_for(spec)
    assert isinstance(client, LiteLLMClient)
    assert client.call_params == {"extra_body": {"scenario": spec.scenario.id,
                                                 "domain": spec.scenario.domain}}
    litellm = litellm_module()
    busy = litellm.BadRequestError("server busy", model="small", llm_provider="openai")
    assert isinstance(classify(litellm, busy, provider_for("test-echo/small")), InfraError)
    assert isinstance(classify(litellm, busy, provider_for("openai/small")), ConfigError)


def test_unknown_prefixes_get_the_generic_provider_and_provider_of_is_the_prefix() -> None:
    generic = provider_named("no-such-provider")
    assert provider_for("openai/gpt-4o-mini") is generic
    assert resolve_route("anthropic/claude") == ModelRoute("anthropic/claude")
    assert [provider_of(n) for n in ("openai/x", "reference/golden", "gpt-4o", "local/default")
            ] == ["openai", "reference", "openai", "local"]
    assert ModelConfig("reference-http/golden").provider == "reference-http"
    assert provider_named("reference").injects_faults
    assert not provider_named("reference-http").injects_faults


def test_a_factory_must_build_a_provider(own_registry: None) -> None:
    register_provider("test-not-a-provider", object)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not a ModelProvider"):
        provider_named("test-not-a-provider")


def _names_in(path: Path) -> set[str]:
    """Identifiers, imported names and non-docstring string constants of a module."""
    tree = parsed(path)
    docstrings = {id(node.value) for node in ast.walk(tree)
                  if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.alias):
            found.add(node.name)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in docstrings:
            found.add(node.value)
    return found


@pytest.mark.parametrize("module", TRIAL_PATH)
def test_the_trial_path_never_names_a_provider(module: str) -> None:
    """No ``if provider == "reference"``, no reference error marker, no reference import:
    only the registry's built-in list (providers.py) names the bundled providers."""
    names = _names_in(REPO / "pipeline" / module)
    named = {n for n in names if "reference" in n.lower() or n.startswith("local/")}
    if module == "models/providers.py":
        named -= {"reference", "reference-http", "reference-anthropic", "reference-gemini",
                  "pipeline.reference.provider:in_process_provider",
                  "pipeline.reference.provider:http_provider"}
    assert named == set(), f"pipeline/{module} names {sorted(named)}"


@pytest.mark.parametrize("provider", sorted(KEYS_OF_PROVIDER))
def test_the_key_table_agrees_with_litellm(provider: str, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    """The key refused before LiteLLM's import is the one LiteLLM itself would ask for."""
    for key in KEYS_OF_PROVIDER.values():
        monkeypatch.delenv(key, raising=False)
    model = f"{provider}/some-model"
    asked = litellm_module().validate_environment(model=model).get("missing_keys")
    assert asked == [KEYS_OF_PROVIDER[provider]]
    assert missing_key(model, {}) == KEYS_OF_PROVIDER[provider]
    assert missing_key(model, {KEYS_OF_PROVIDER[provider]: "sk-x"}) is None
    assert missing_key("some-model", {}) is None and missing_key("acme/x", {}) is None


class OwnPrefixProvider(ModelProvider):
    """A plugin whose models keep its own prefix: it installs a LiteLLM handler by that name."""

    def install(self, litellm: Any) -> None:
        litellm.custom_provider_map = [*litellm.custom_provider_map,
                                       {"provider": "test-own", "custom_handler": object()}]


def test_a_plugins_own_prefix_is_not_refused_as_unknown_to_litellm(
        own_registry: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The table of LiteLLM's prefixes refuses early; a prefix of the registry goes on to
    LiteLLM, which knows it once the plugin installed its handler."""
    from pipeline.sweep.preflight import PreflightError, preflight

    litellm = litellm_module()
    monkeypatch.setattr(litellm, "custom_provider_map", list(litellm.custom_provider_map))
    with pytest.raises(PreflightError, match="LiteLLM knows no provider"):
        preflight([ModelConfig("test-own/x")], [], ["default"], [])
    register_provider("test-own", OwnPrefixProvider)
    provider_named("test-own").install(litellm)  # as litellm_module() does in a fresh process
    preflight([ModelConfig("test-own/x")], [], ["default"], [])
