"""A model's list price (LiteLLM's price table, offline): what a spend cap counts a call at when
its provider reported no cost of its own.

The warehouse's ``cost_usd`` stays the provider's own report (unknown is null, never an
estimate). A spend cap (pipeline.execution.spend) still has to count what a call cost, so it
takes the provider's report when there is one, else the tokens the provider reported at the
model's list price; a model with neither is of unknown cost, and a cap refuses it unless the
spec says ``unknown_cost: allow`` (pipeline.sweep.preflight).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipeline.models.config import ModelConfig


@dataclass(frozen=True)
class Price:
    """USD per prompt and per completion token."""

    input_per_token: float
    output_per_token: float

    def cost(self, input_tokens: int | None, output_tokens: int | None) -> float | None:
        """The calls' cost at this price; None when a token count is unknown."""
        if input_tokens is None or output_tokens is None:
            return None
        return input_tokens * self.input_per_token + output_tokens * self.output_per_token


def _model_info(model: ModelConfig) -> dict[str, Any]:
    """The model's entry in LiteLLM's offline table (empty when it has none)."""
    route = model.resolved().route
    if route is None:
        return {}
    from pipeline.models.client import litellm_module

    litellm = litellm_module()
    try:
        return dict(litellm.get_model_info(model=route.litellm_model))
    except Exception:  # LiteLLM raises for a model its table lacks: no price
        return {}


def call_ceiling(model: ModelConfig) -> float | None:
    """The most one call may cost at the list price: a full context window in, ``max_tokens``
    out. None without a price, a context window, or a ``max_tokens`` in the model's params."""
    price = list_price(model)
    limit = model.resolved().params.get("max_tokens") or model.resolved().params.get(
        "max_completion_tokens")
    window = _model_info(model).get("max_input_tokens")
    if price is None or not isinstance(limit, int) or not isinstance(window, int):
        return None
    return window * price.input_per_token + limit * price.output_per_token


def list_price(model: ModelConfig) -> Price | None:
    """The model's list price in LiteLLM's offline table (by its route's LiteLLM name); None
    when the table does not price it (a local or reference model, an unknown name)."""
    info = _model_info(model)
    prompt, completion = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if not isinstance(prompt, int | float) or not isinstance(completion, int | float):
        return None
    return Price(float(prompt), float(completion))
