"""Preflight: every mistake in a sweep's inputs found before its first trial runs.

``preflight(models, suites, prompts, memory_modes)`` raises ``PreflightError`` (one line,
naming the option or the file and field) for: a model no provider knows (a name its registered
provider refuses, e.g. an unknown reference variant; a LiteLLM provider prefix LiteLLM does not
have), a real provider whose key is not in the environment, an ``api_base`` nothing listens on,
a prompt a domain lacks, a memory mode a domain cannot run (structured needs
``state.schema.json``), and whatever a model's provider checks in the suites
(``ModelProvider.check_suites``: reference models need a golden summary or state per turn).
LiteLLM is imported only when a real provider is named (it costs seconds).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit

from pipeline.catalog import CatalogError, Suite, load_domain
from pipeline.models.config import ModelConfig
from pipeline.models.providers import provider_for, provider_named

NO_KEY = "no-key"
"""The key sent to an OpenAI-compatible ``api_base`` when the environment has none (local
servers need none; LiteLLM refuses to call without one)."""


class PreflightError(ValueError):
    """A sweep input that cannot work; ``str()`` names the option or file and field."""


def preflight(models: Sequence[ModelConfig], suites: Sequence[Suite], prompts: Sequence[str],
              memory_modes: Sequence[str]) -> None:
    """Every check, in order; ``models`` as configured (their routes are resolved here if they
    are not yet: a name its provider does not know is refused)."""
    for model in models:
        if model.api_key_env and not os.environ.get(model.api_key_env):
            raise PreflightError(f"--model {model.name}: api_key_env {model.api_key_env} is not "
                                 "set in the environment")
    resolved = [_resolved(model) for model in models]
    _check_models(resolved)
    _check_domains(suites, prompts, memory_modes)
    for name in sorted({model.provider for model in resolved}):
        try:
            provider_named(name).check_suites(suites, memory_modes)
        except ValueError as exc:
            raise PreflightError(str(exc)) from None


def _resolved(model: ModelConfig) -> ModelConfig:
    try:
        return model.resolved()
    except ValueError as exc:
        raise PreflightError(f"--model {model.name}: {exc}") from None


def _check_domains(suites: Sequence[Suite], prompts: Sequence[str],
                   memory_modes: Sequence[str]) -> None:
    domains = sorted({s.scenario.domain for suite in suites for s in suite.scenarios})
    for name in domains:
        domain = load_domain(name)
        for prompt in prompts:
            try:
                domain.prompt(prompt)
            except CatalogError as exc:
                raise PreflightError(f"--prompt {prompt}: {exc.message}") from None
        if "structured" in memory_modes and domain.state_schema is None:
            raise PreflightError(f"--memory-mode structured: domain {name} has no "
                                 f"state.schema.json ({domain.path}), so its scenarios cannot "
                                 "run in structured mode; leave that mode out")


def _check_models(models: Iterable[ModelConfig]) -> None:
    """Models that LiteLLM reaches over the network: a provider it knows, a key or an endpoint
    (offline providers and node services have neither to check)."""
    for model in models:
        served = model.route is not None and model.route.node_service
        if not provider_for(model.name).offline and not served:
            _check_provider(model, _endpoint(model))


def _endpoint(model: ModelConfig) -> str | None:
    """The model's own endpoint ("" = its own key but no endpoint), None = the provider's."""
    if model.api_base:
        return model.api_base
    return "" if model.api_key_env else None


def _check_provider(model: ModelConfig, api_base: str | None) -> None:
    from pipeline.models.client import litellm_module

    litellm = litellm_module()
    target = model.route.litellm_model if model.route is not None else model.name
    try:
        litellm.get_llm_provider(target)
    except Exception:  # LiteLLM raises its BadRequestError for an unknown prefix
        raise PreflightError(f"--model {model.name}: LiteLLM knows no provider for it; write "
                             "<provider>/<model>, e.g. openai/gpt-4o-mini or "
                             "anthropic/claude-3-5-haiku-latest") from None
    if api_base is not None:
        if api_base:
            _check_reachable(model.name, api_base)
        return  # an explicit endpoint or key: a missing provider key is not needed
    missing = litellm.validate_environment(model=target).get("missing_keys") or []
    if missing:
        raise PreflightError(f"--model {model.name}: set {', '.join(missing)} in the "
                             "environment (the provider's key; it is never stored or printed)")


def _check_reachable(model: str, api_base: str) -> None:
    parts = urlsplit(api_base)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "", port), timeout=3):
            return
    except OSError as exc:
        raise PreflightError(f"{model}: api_base {parts.scheme}://{parts.hostname}:{port} is "
                             f"not reachable ({exc.strerror or exc})") from None
