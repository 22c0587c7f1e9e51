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


def list_price(model: ModelConfig) -> Price | None:
    """The model's list price in LiteLLM's offline table (by its route's LiteLLM name); None
    when the table does not price it (a local or reference model, an unknown name)."""
    route = model.resolved().route
    if route is None:
        return None
    from pipeline.models.client import litellm_module

    litellm = litellm_module()
    try:
        info = litellm.get_model_info(model=route.litellm_model)
    except Exception:  # LiteLLM raises for a model its table lacks: no price
        return None
    prompt, completion = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if not isinstance(prompt, int | float) or not isinstance(completion, int | float):
        return None
    return Price(float(prompt), float(completion))
