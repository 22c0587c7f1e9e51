"""What each model call of a trial carries besides the messages: the models of a config,
injected fault profiles, and per-model call parameters (endpoint, key) resolved on the driver."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from pipeline.models.config import ModelConfig
from pipeline.models.faults import FaultProfile

NO_KEY = "no-key"
"""The key sent to an OpenAI-compatible ``api_base`` when the environment has none (local
servers need none; LiteLLM refuses to call without one)."""


def called_models(models: Sequence[ModelConfig], user_model: ModelConfig | None
                  ) -> list[ModelConfig]:
    """Every model a sweep calls: its models, then its user simulator's (its limits, faults
    and call options apply to its own calls) unless it is one of them."""
    called = list(models)
    if user_model is not None and user_model.name not in {m.name for m in called}:
        called.append(user_model)
    return called


def faults_from(models: Sequence[ModelConfig]) -> dict[str, FaultProfile]:
    """Model name -> injected fault profile."""
    return {m.name: m.faults for m in models if m.faults is not None}


def call_params_from(models: Sequence[ModelConfig]) -> dict[str, dict[str, Any]]:
    """Model name -> per-call LiteLLM options of its configuration: ``api_base``, a
    placeholder key when the environment has none for the provider (LiteLLM refuses to call
    an OpenAI-compatible endpoint without one; a local server needs none), and the call's
    ``timeout`` (the model's ``timeout_s``)."""
    params = {m.name: call_params_of(m) for m in models}
    return {name: entry for name, entry in params.items() if entry}


def call_params_of(model: ModelConfig) -> dict[str, Any]:

    from pipeline.models.call_params import NO_KEY
    from pipeline.util.secrets import key_from_env, reveal, revealed_params

    entry: dict[str, Any] = revealed_params(model.name)
    if model.api_base:
        entry["api_base"] = reveal(model.api_base)
        if not model.api_key_env and not os.environ.get(f"{model.provider.upper()}_API_KEY"):
            entry["api_key"] = NO_KEY
    if model.api_key_env:
        entry["api_key"] = key_from_env(model.api_key_env)
    if model.timeout_s:
        entry["timeout"] = float(model.timeout_s)
    return entry

