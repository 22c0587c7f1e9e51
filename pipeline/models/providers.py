"""Model providers: registered by name, looked up by the prefix of a model name.

A model name's provider is its LiteLLM prefix (``openai/gpt-4o-mini`` -> ``openai``; a name
without one is LiteLLM's default, ``openai``): ``provider_of`` is the one place that says so.
A provider registered under that name adapts the model's calls; every other name goes to the
generic LiteLLM provider (the name is the LiteLLM model string, nothing else is adapted). A
provider whose models answer in this process (the reference models) may answer without LiteLLM
(``answers_in_process``); limits, faults and error reading stay the same.

What a provider may adapt, each a small hook with a do-nothing default (``ModelProvider``):
its route (``pipeline.models.routes.ModelRoute``: the LiteLLM model string and per-call options),
per-trial call options (a reference model's script), a client's merged options before its
first call (an HTTP reference model's script swapped for its id), its LiteLLM set-up (a custom
handler), the classification of its own errors, and checks before a sweep. The trial path and the
LiteLLM client only call these hooks; they never name a provider.

The registry is explicit and lazy: ``register_provider(name, factory)`` refuses a name that is
taken; a factory is a callable or a ``"module:attribute"`` path, imported on first lookup. The
built-in providers (``reference``, ``reference-http``, ``reference-anthropic``,
``reference-gemini``, ``local``) are registered by
``_register_builtins`` through that same call, the first time any provider is looked up. A
plugin registers its own before the sweep starts, in every process that runs trials (the
driver resolves routes; Ray workers look providers up again for their hooks).
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar

from pipeline.catalog import Domain, Scenario, Suite
from pipeline.models.routes import ModelRoute
from warehouse.schema import AccessChannel

DEFAULT_PROVIDER = "openai"
"""LiteLLM's provider for a model name without a prefix."""


def provider_of(model: str) -> str:
    """The provider (group) of a model name: its LiteLLM prefix, else LiteLLM's default."""
    return model.split("/", 1)[0] if "/" in model else DEFAULT_PROVIDER


class ModelProvider:
    """How models of one provider are reached and adapted. Subclasses override ``route`` and
    whichever hooks they need; the defaults adapt nothing (a plain LiteLLM provider)."""

    offline: ClassVar[bool] = False
    """Answers in process, without a key or an endpoint (preflight checks none)."""
    injects_faults: ClassVar[bool] = False
    """Takes a ``faults:`` profile in a sweep spec (injected in process around each call)."""
    access: ClassVar[AccessChannel | None] = None
    """How its models are reached, when the provider knows (None: read from the api_base)."""
    answers_in_process: ClassVar[bool] = False
    """Its models answer in this process (``answer``), not through LiteLLM: no request leaves
    the process, so LiteLLM's request building, cost lookup and logging would only cost CPU."""

    def route(self, model: str) -> ModelRoute:
        """How LiteLLM reaches ``model``; ValueError for a name this provider does not know."""
        return ModelRoute(model)

    def trial_params(self, route: ModelRoute, scenario: Scenario,
                     domain: Domain) -> dict[str, Any]:
        """Per-call LiteLLM options for every call of one trial (not part of its identity);
        ``domain``: the scenario's domain as the trial loaded it."""
        return {}

    def client_options(self, options: dict[str, Any]) -> dict[str, Any]:
        """A client's merged call options (per-trial, the sweep's, the route's), adapted once
        before its first call; the default leaves them as they are."""
        return options

    def answer(self, route: ModelRoute, messages: list[dict[str, Any]],
               options: dict[str, Any]) -> Mapping[str, Any]:
        """For a provider that ``answers_in_process``: the call's first choice in OpenAI's
        shape (``finish_reason``, ``message``); ``options``: the call's LiteLLM options
        (generation params, per-trial options, ``metadata`` with the call tag, ``tools``)."""
        raise NotImplementedError(f"{type(self).__name__} answers through LiteLLM")

    def install(self, litellm: Any) -> None:
        """Set LiteLLM up for this provider, once per process (idempotent)."""

    def classify(self, exc: BaseException, message: str) -> Exception | None:
        """This provider's own reading of a failed call (``message``: its redacted first line),
        or None to leave it to the generic classification."""
        return None

    def check_suites(self, suites: Sequence[Suite], memory_modes: Sequence[str]) -> None:
        """Before a sweep that names this provider: ValueError for data its models lack (by
        default, the first memory mode ``lacking`` names)."""
        for mode in memory_modes:
            lack = self.lacking(suites, mode)
            if lack is not None:
                raise ValueError(f"{lack} (add it, or leave {mode} mode out for these models)")

    def lacking(self, suites: Sequence[Suite], memory_mode: str) -> str | None:
        """What this provider's models lack to run ``suites`` in ``memory_mode``
        (``file:line: field: ...``), None when they can run it. A memory mode nobody chose is
        left out of a sweep when a model's provider lacks something for it."""
        return None


ProviderFactory = Callable[[], ModelProvider] | str
"""A callable that builds the provider, or ``"module:attribute"`` naming one (or a class)."""

_factories: dict[str, ProviderFactory] = {}
_instances: dict[str, ModelProvider] = {}
_builtins_done = False
_lock = threading.RLock()
_GENERIC = ModelProvider()


def register_provider(name: str, factory: ProviderFactory) -> None:
    """Models named ``name/...`` are adapted by the provider ``factory`` builds (on first
    lookup). A name registered twice is refused, built-in names included."""
    with _lock:
        _register_builtins()
        _add(name, factory)


def _add(name: str, factory: ProviderFactory) -> None:
    if not name or "/" in name:
        raise ValueError(f"a provider name is a model name's prefix, got {name!r}")
    if name in _factories:
        raise ValueError(f"a provider named {name!r} is already registered")
    _factories[name] = factory


def _register_builtins() -> None:
    """The bundled providers, registered the way a plugin registers its own."""
    global _builtins_done
    if _builtins_done:
        return
    _builtins_done = True
    _add("reference", "pipeline.reference.provider:in_process_provider")
    _add("reference-http", "pipeline.reference.provider:http_provider")
    _add("reference-anthropic", "pipeline.reference.provider:http_provider")
    _add("reference-gemini", "pipeline.reference.provider:http_provider")
    _add("local", "pipeline.local.route:LocalProvider")


def registered_providers() -> list[str]:
    with _lock:
        _register_builtins()
        return sorted(_factories)


def provider_named(name: str) -> ModelProvider:
    """The provider registered as ``name``, else the generic LiteLLM provider."""
    with _lock:
        _register_builtins()
        if name not in _factories:
            return _GENERIC
        if name not in _instances:
            _instances[name] = _build(_factories[name])
        return _instances[name]


def provider_for(model: str) -> ModelProvider:
    """The provider that adapts ``model`` (looked up by ``provider_of(model)``)."""
    return provider_named(provider_of(model))


def _build(factory: ProviderFactory) -> ModelProvider:
    if isinstance(factory, str):
        module, _, attribute = factory.partition(":")
        factory = getattr(importlib.import_module(module), attribute)
        assert callable(factory), f"{module}:{attribute} is not callable"
    provider = factory()
    if not isinstance(provider, ModelProvider):
        raise TypeError(f"a provider factory built {type(provider).__name__}, not a "
                        "ModelProvider")
    return provider


def all_providers() -> Iterator[ModelProvider]:
    """Every registered provider (built on demand), in name order."""
    for name in registered_providers():
        yield provider_named(name)


def install_providers(litellm: Any) -> None:
    """Every registered provider's LiteLLM set-up (``pipeline.models.client`` calls it once)."""
    for provider in all_providers():
        provider.install(litellm)


def fault_providers() -> list[str]:
    """Names of the providers that take injected faults."""
    return [name for name in registered_providers() if provider_named(name).injects_faults]


def resolve_route(model: str) -> ModelRoute:
    """The route of ``model``; ValueError for a name its provider does not know."""
    return provider_for(model).route(model)
