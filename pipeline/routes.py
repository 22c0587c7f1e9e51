"""Model routes: how a model name under test is reached through LiteLLM.

Most names are LiteLLM model strings already (``openai/gpt-4o-mini``, ``reference/golden``):
their route is the name itself. A provider prefix may instead register a resolver that maps a
name to another LiteLLM model string plus per-call options, and may ask for a *node service*:
a server started on every Ray node for the sweep, whose address each worker adds to its calls
(the bundled local models: ``local/<name>`` becomes ``openai/<name>`` at the node's own
llama.cpp server). Resolution happens once, when a sweep is planned; the trial path then calls
LiteLLM with what the route says and never looks at the provider again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

ScriptChannel = Literal["metadata", "body"]


@dataclass(frozen=True)
class ModelRoute:
    litellm_model: str
    """The model string LiteLLM is called with."""
    call_params: Mapping[str, Any] = field(default_factory=dict)
    """Per-call LiteLLM options that are not generation params (not part of trial identity)."""
    default_params: Mapping[str, Any] = field(default_factory=dict)
    """Generation params applied unless the sweep sets them (part of trial identity)."""
    node_service: str | None = None
    """A per-node server this route needs (its name for ``pipeline.services``), or None."""
    structured_output: bool | None = None
    """Whether the endpoint honours ``response_format`` with a JSON Schema; None = ask
    LiteLLM's model table."""
    timeout_s: float | None = None
    """Default per-call timeout for the route; None = the sweep's default."""
    scripted: ScriptChannel | None = None
    """A reference model: each call carries the scenario's golden script, in LiteLLM's
    ``metadata`` (in-process provider) or in the request ``body`` (the reference server)."""


RouteResolver = Callable[[str], ModelRoute]


def _local_route(name: str) -> ModelRoute:
    from pipeline.local.route import local_route

    return local_route(name)


def _reference_route(name: str) -> ModelRoute:
    from pipeline.models.reference import reference_route

    return reference_route(name)


_RESOLVERS: dict[str, RouteResolver] = {"local": _local_route, "reference": _reference_route,
                                        "reference-http": _reference_route}


def register_route_resolver(provider: str, resolver: RouteResolver) -> None:
    """Route names with prefix ``provider`` through ``resolver`` (duplicates refused)."""
    if provider in _RESOLVERS:
        raise ValueError(f"a route resolver for {provider!r} is already registered")
    _RESOLVERS[provider] = resolver


def resolve_route(model: str) -> ModelRoute:
    """The route of ``model``; ValueError for a name its provider does not know."""
    provider = model.split("/", 1)[0] if "/" in model else ""
    resolver = _RESOLVERS.get(provider)
    return resolver(model) if resolver is not None else ModelRoute(model)


def resolve_routes(models: Mapping[str, Any] | list[str]) -> dict[str, ModelRoute]:
    return {name: resolve_route(name) for name in models}
