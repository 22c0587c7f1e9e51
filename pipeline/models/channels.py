"""The access channel of a model under test (the unstated-conditions method: record how the model
was reached)."""

from __future__ import annotations

from urllib.parse import urlparse

from pipeline.models.providers import provider_for, provider_of
from warehouse.schema import AccessChannel

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
ROUTER_PROVIDERS = frozenset({"openrouter"})
"""LiteLLM providers that are routers: one API in front of many model providers."""


def access_channel(model: str, api_base: str | None) -> AccessChannel:
    """The provider's own channel when it declares one (reference models, local models); else
    ``local_server`` for a loopback api_base, ``router`` for a router provider or an api_base
    whose host names a router, ``direct_api`` otherwise."""
    declared = provider_for(model).access
    if declared is not None:
        return declared
    host = (urlparse(api_base).hostname or "") if api_base else ""
    if host in LOOPBACK_HOSTS:
        return "local_server"
    if provider_of(model) in ROUTER_PROVIDERS or "router" in host:
        return "router"
    return "direct_api"
