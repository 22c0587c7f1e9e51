"""Preflight: every mistake in a sweep's inputs found before its first trial runs.

``preflight(config, suites)`` raises ``PreflightError`` (one line, naming the option or the file
and field) for: a model no provider knows (an unknown reference variant, a LiteLLM provider
prefix LiteLLM does not have), a real provider whose key is not in the environment, an
``api_base`` nothing listens on, a prompt a domain lacks, a memory mode a domain cannot run
(structured needs ``state.schema.json``), and golden data a reference model needs but a
scenario lacks (a summary or state per turn). LiteLLM is imported only when a real provider
is named (it costs seconds).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit

from pipeline.catalog import CatalogError, Suite, load_domain
from pipeline.grid import ModelConfig
from pipeline.models.reference import REFERENCE_PROVIDER, REFERENCE_VARIANTS

NO_KEY = "no-key"
"""The key sent to an OpenAI-compatible ``api_base`` when the environment has none (local
servers need none; LiteLLM refuses to call without one)."""


class PreflightError(ValueError):
    """A sweep input that cannot work; ``str()`` names the option or file and field."""


def preflight(models: Sequence[ModelConfig], suites: Sequence[Suite], prompts: Sequence[str],
              memory_modes: Sequence[str], api_bases: dict[str, str],
              key_envs: dict[str, str] | None = None) -> None:
    for model, variable in (key_envs or {}).items():
        if not os.environ.get(variable):
            raise PreflightError(f"--model {model}: api_key_env {variable} is not set in the "
                                 "environment")
    _check_models(models, {**api_bases, **{m: "" for m in key_envs or {} if m not in api_bases}})
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
    if any(m.provider == REFERENCE_PROVIDER for m in models):
        _check_golden_memory(suites, memory_modes)


def _check_models(models: Iterable[ModelConfig], api_bases: dict[str, str]) -> None:
    real = []
    for model in models:
        if model.provider == REFERENCE_PROVIDER:
            variant = model.name.split("/", 1)[1] if "/" in model.name else ""
            if variant not in REFERENCE_VARIANTS:
                known = ", ".join(f"{REFERENCE_PROVIDER}/{v}" for v in sorted(REFERENCE_VARIANTS))
                raise PreflightError(f"--model {model.name}: no such reference model "
                                     f"(known: {known})")
        elif model.route is None or not model.route.node_service:
            real.append(model)
    for model in real:
        _check_provider(model, api_bases.get(model.name))


def _check_provider(model: ModelConfig, api_base: str | None) -> None:
    from pipeline.llm import litellm_module

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


def _check_golden_memory(suites: Sequence[Suite], memory_modes: Sequence[str]) -> None:
    needs = [(mode, key) for mode, key in (("summary", "summary"), ("structured", "state"))
             if mode in memory_modes]
    for suite in suites:
        for loaded in suite.scenarios:
            for index, turn in enumerate(loaded.scenario.turns):
                for mode, key in needs:
                    if getattr(turn, key) is None:
                        raise PreflightError(
                            f"{suite.path}:{loaded.line}: turns.{index}.{key}: reference models "
                            f"in {mode} mode need the golden {key} of every turn (add it, or "
                            f"leave {mode} mode out for reference models)")
