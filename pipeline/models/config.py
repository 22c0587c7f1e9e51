"""One model under test and how it is called: the only model configuration type.

A ``ModelConfig`` is built once, from the command line (``pipeline.cli.run``) or from a
sweep spec's ``models:`` entry (``pipeline.sweep.spec``), and travels unchanged from there: in
``SweepConfig.models`` (so into ``runs.config_json``), resolved per sweep (``resolved``: its
route, with the route's default params under its own), per repeat (``for_repeat``: the seed
moves), into every ``TrialSpec`` and its ``trial_id`` (``generation_params``), into the
``trials`` row (temperature, generation_params, seed, provider), and onto every model call
(``pipeline.models.client.LiteLLMClient``: planner and memory calls alike).

Part of the trial identity: name, temperature, params and seed (``generation_params``). How
the model is reached (concurrency, rpm, tpm, spend cap, api_base, key, timeout, faults) is not.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from pipeline.models.faults import FaultProfile
from pipeline.models.providers import fault_providers, provider_for, provider_of, resolve_route
from pipeline.models.routes import ModelRoute
from pipeline.util.redact import masked, redact_fields

RESERVED_PARAMS = frozenset({
    "model", "messages", "tools", "tool_choice", "temperature", "seed", "api_base",
    "api_key", "metadata", "stream",
})
"""Call options that are set elsewhere and may not be smuggled in as generation params."""


class ModelConfig(BaseModel):
    """A model under test and how it is called. ``ModelConfig("openai/x", temperature=0.7)``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    """LiteLLM model name, e.g. ``openai/gpt-4o-mini`` or ``reference/golden``."""
    temperature: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    """Sampling temperature (part of the trial identity)."""
    params: Mapping[str, Any] = Field(default_factory=dict)
    """Other generation params passed to LiteLLM per call (top_p, max_tokens, ...); part of
    the trial identity."""
    seed: int | None = None
    """Seed of repeat 0 (repeat r gets seed + r, ``for_repeat``); part of the trial identity."""
    concurrency: int | None = Field(default=None, ge=1)
    """Most calls in flight at once for this model's provider group; None = no own limit."""
    rpm: int | None = Field(default=None, ge=1)
    """Most model calls a minute for this model's provider group, across the cluster."""
    tpm: int | None = Field(default=None, ge=1)
    """Most tokens (prompt and completion) a minute for this model's provider group, across
    the cluster: each call counts an estimate first, corrected by the usage it reports."""
    max_cost_usd: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Spend cap of this model in the sweep (USD): once its recorded cost reaches it, no new
    attempt of its trials starts (pipeline.execution.spend)."""
    api_base: str | None = None
    """OpenAI-compatible endpoint (a local server, a proxy); None = the provider's default."""
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """Environment variable that holds this model's key (a key is never written in a spec)."""
    timeout_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Time limit of one model call (connect at most 10 s of it); None = the route's (local
    models: 900 s), else 120 s. A call that runs out is an infrastructure attempt of kind
    ``timeout``."""
    faults: FaultProfile | None = None
    """Injected latency and failures; only for providers that inject them (reference models)."""

    _route: ModelRoute | None = PrivateAttr(default=None)

    def __init__(self, name: str | None = None, /, **data: Any) -> None:
        if name is not None:
            data["name"] = name
        super().__init__(**data)

    @field_validator("params")
    @classmethod
    def _no_reserved_params(cls, value: Mapping[str, Any]) -> Mapping[str, Any]:
        reserved = sorted(RESERVED_PARAMS & set(value))
        if reserved:
            raise ValueError(f"{', '.join(reserved)} cannot be set in params")
        return dict(value)

    @model_validator(mode="after")
    def _faults_only_where_injected(self) -> ModelConfig:
        if self.faults is not None and not provider_for(self.name).injects_faults:
            names = fault_providers()
            raise ValueError(f"faults are only for {' or '.join(names)} models "
                             f"({', '.join(f'{n}/...' for n in names)}), not {self.name!r}")
        return self

    @property
    def provider(self) -> str:
        """The provider group (``pipeline.models.providers.provider_of``): the name's prefix."""
        return provider_of(self.name)

    @property
    def route(self) -> ModelRoute | None:
        """How LiteLLM reaches the model, once ``resolved``; None before."""
        return self._route

    def resolved(self) -> ModelConfig:
        """This config with its route, and the route's default params under its own (they
        become part of the identity). ValueError for a model its provider does not know."""
        if self._route is not None:
            return self
        route = resolve_route(self.name)
        out = self.model_copy(update={"params": {**route.default_params, **self.params}})
        out._route = route
        return out

    def for_repeat(self, repeat: int) -> ModelConfig:
        """The config of repeat ``repeat``: seed + repeat (unchanged without a seed)."""
        return self if self.seed is None else self.model_copy(update={"seed": self.seed + repeat})

    def generation_params(self) -> dict[str, Any]:
        """Params that define the model's behaviour: sent on every call, part of the trial
        identity, recorded as ``trials.generation_params``. Secrets redacted by field (every
        header, every key/token/secret field: ``pipeline.util.redact.redact_fields``): a trial's
        identity and record never hold one, and a rotated token keeps its trial ids; the real
        values reach the call as call options (``secret_params``)."""
        out: dict[str, Any] = {"temperature": self.temperature, **redact_fields(dict(self.params))}
        if self.seed is not None:
            out["seed"] = self.seed
        return out

    def secret_params(self) -> dict[str, Any]:
        """The params that ``generation_params`` redacts, with their real values (none once the
        config is concealed: ``pipeline.util.secrets``)."""
        shown = redact_fields(dict(self.params))
        return {k: v for k, v in self.params.items() if shown.get(k) != v and not masked(v)}
