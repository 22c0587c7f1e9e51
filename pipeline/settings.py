"""Per-model settings of a sweep: how one model under test is called.

``ModelSettings`` carries generation params, its provider group's concurrency limit, an optional
``api_base`` and, for reference models, a fault profile. A sweep spec fills them in and
``SweepConfig.model_settings`` stores them; the executor applies concurrency and faults.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from pipeline.grid import ModelConfig
from pipeline.models.faults import FaultProfile
from pipeline.models.reference import REFERENCE_PROVIDER
from pipeline.routes import resolve_route

# Call options that are set elsewhere and may not be smuggled in as generation params.
RESERVED_PARAMS = frozenset({
    "model", "messages", "tools", "tool_choice", "temperature", "seed", "api_base",
    "api_key", "metadata", "stream",
})


class ModelSettings(BaseModel):
    """One model under test and how it is called."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    """LiteLLM model name, e.g. ``openai/gpt-4o-mini`` or ``reference/golden``."""
    temperature: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    """Sampling temperature (part of the trial identity)."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Other generation params passed to LiteLLM per call (top_p, max_tokens, ...)."""
    seed: int | None = None
    """Seed of repeat 0 (repeat r gets seed + r); part of the trial identity."""
    concurrency: int | None = Field(default=None, ge=1)
    """Most trials in flight at once for this model's provider group; None = no own limit."""
    api_base: str | None = None
    """OpenAI-compatible endpoint (a local server, a proxy); None = the provider's default."""
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """Environment variable that holds this model's key (a key is never written in a spec)."""
    timeout_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Time limit of one model call (connect at most 10 s of it); None = the sweep's
    ``timeout_s``, else the route's (local models: 900 s), else 120 s. A call that runs out is
    an infrastructure attempt of kind ``timeout``."""
    faults: FaultProfile | None = None
    """Injected latency and failures; reference models only."""

    @property
    def provider(self) -> str:
        """The provider group: the LiteLLM prefix of the name."""
        return ModelConfig(self.name).provider

    @field_validator("params")
    @classmethod
    def _no_reserved_params(cls, value: dict[str, Any]) -> dict[str, Any]:
        reserved = sorted(RESERVED_PARAMS & set(value))
        if reserved:
            raise ValueError(f"{', '.join(reserved)} cannot be set in params")
        return value

    @model_validator(mode="after")
    def _faults_only_for_reference_models(self) -> ModelSettings:
        if self.faults is not None and self.provider != REFERENCE_PROVIDER:
            raise ValueError(f"faults are only for reference models "
                             f"({REFERENCE_PROVIDER}/...), not {self.name!r}")
        return self

    def to_model_config(self) -> ModelConfig:
        """The grid's view: what defines the model's behaviour (and so the trial identity),
        with its route resolved and the route's default params under the spec's own."""
        route = resolve_route(self.name)
        params = {**route.default_params, **self.params}
        return ModelConfig(name=self.name, temperature=self.temperature,
                           params=tuple(sorted(params.items())), seed=self.seed, route=route)
