"""A spend cap: once the recorded cost of a sweep (or of one of its models) reaches its
``max_cost_usd``, no new attempt starts; attempts already running finish.

Pure bookkeeping on the driver (no Ray, no LiteLLM): the executor tells ``SpendBook`` every
finished attempt and asks it before starting one. An attempt's spend is its agent's calls plus
its user simulator's, each the provider's reported cost, else the tokens the provider reported
at the model's list price (pipeline.models.pricing), else unknown. Unknown is never taken as
zero: a cap refuses a model of unknown cost before the sweep starts unless the spec says
``unknown_cost: allow`` (pipeline.sweep.preflight); then such calls are counted apart
(``unknown_attempts``) and the summary says so. A resume starts from what the run's trials
already recorded (``prior``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from pipeline.models.pricing import Price
from warehouse.rows import TrialRow


def usd(amount: float) -> str:
    """An amount as the summary says it: to the millionth of a dollar (caps can be cents)."""
    return f"${amount:.6f}"


@dataclass(frozen=True)
class Charge:
    """One model's calls in one attempt, as the warehouse recorded them."""

    model: str
    calls: int
    cost_usd: float | None
    input_tokens: int | None
    output_tokens: int | None

    def usd(self, price: Price | None) -> float | None:
        """What the calls cost: reported, else at the list price; None when unknown."""
        if self.calls == 0:
            return 0.0
        if self.cost_usd is not None:
            return self.cost_usd
        return None if price is None else price.cost(self.input_tokens, self.output_tokens)


def charges_of(row: TrialRow) -> list[Charge]:
    """An attempt's charges: its agent model's calls, then its user simulator's."""
    out = [Charge(row.model, row.model_calls, row.cost_usd, row.input_tokens,
                  row.output_tokens)]
    if row.user_model is not None:
        out.append(Charge(row.user_model, row.user_model_calls or 0, row.user_cost_usd,
                          row.user_input_tokens, row.user_output_tokens))
    return out


@dataclass(frozen=True)
class SpendCaps:
    """The caps of a sweep, in USD; None / absent: no cap."""

    sweep: float | None = None
    models: Mapping[str, float] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return self.sweep is not None or bool(self.models)


@dataclass
class SpendBook:
    """What a sweep has spent, per model, against its caps."""

    caps: SpendCaps
    prices: Mapping[str, Price | None] = field(default_factory=dict)
    """Model name -> its list price (None or absent: none)."""
    spent: dict[str, float] = field(default_factory=dict)
    unknown_attempts: int = 0
    """Attempts with a model call of unknown cost (not counted)."""
    not_started: int = 0
    """Trials and retries the executor did not start because a cap was reached."""
    on_reached: Callable[[str], None] | None = None
    """Told once when a cap is reached (the line ``reached`` gives)."""
    _said: bool = False

    def add(self, charges: Iterable[Charge]) -> None:
        """A finished attempt's charges (or a resumed run's recorded ones)."""
        unknown = False
        for charge in charges:
            usd = charge.usd(self.prices.get(charge.model))
            if usd is None:
                unknown = True
            else:
                self.spent[charge.model] = self.spent.get(charge.model, 0.0) + usd
        self.unknown_attempts += unknown
        line = self.reached()
        if line is not None and not self._said and self.on_reached is not None:
            self._said = True
            self.on_reached(line)

    @property
    def total(self) -> float:
        return sum(self.spent.values())

    def allows(self, models: Iterable[str]) -> bool:
        """May an attempt calling these models start?"""
        if self.caps.sweep is not None and self.total >= self.caps.sweep:
            return False
        return all(self.spent.get(m, 0.0) < self.caps.models.get(m, float("inf"))
                   for m in models)

    def capped_models(self) -> list[str]:
        return sorted(m for m, cap in self.caps.models.items() if self.spent.get(m, 0.0) >= cap)

    def reached(self) -> str | None:
        """Which cap was reached and what was spent, as one line; None while none is."""
        parts = []
        if self.caps.sweep is not None and self.total >= self.caps.sweep:
            parts.append(f"max_cost_usd {self.caps.sweep:g} of the sweep")
        parts += [f"max_cost_usd {self.caps.models[m]:g} of {m} (spent {usd(self.spent[m])})"
                  for m in self.capped_models()]
        if not parts:
            return None
        unknown = (f"; {self.unknown_attempts} attempt(s) of unknown cost not counted"
                   if self.unknown_attempts else "")
        return (f"spend cap reached: {', '.join(parts)}; {usd(self.total)} spent in this run"
                f"{unknown}")
