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

Attempts in flight are counted before they end: each one reserves its worst case when it
starts (``reserve``: every call it may make at its model's context window and ``max_tokens``,
at the list price), and an attempt starts only while what was spent and reserved is under the
cap (``fits``). When it ends its actual cost replaces the reservation. So a sweep spends at
most the cap plus the actual cost of the last attempt it started. An attempt whose worst case
is unknown (no price, no ``max_tokens``, an external agent) reserves the largest actual cost
of a finished attempt of its model; before one has finished, it reserves everything: it runs
alone, as a probe.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from pipeline.models.pricing import Price
from pipeline.trial.spec import TrialSpec
from warehouse.rows import TrialRow

MEMORY_CALLS_PER_TURN = 2
"""Memory calls one turn may make besides the planner's steps: an update and its repair
(pipeline.trial.memory)."""


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


def worst_case(spec: TrialSpec, ceilings: Mapping[str, float | None]) -> dict[str, float | None]:
    """What an attempt of ``spec`` may cost at most, per model it calls: its calls at most
    (turns times steps and memory calls; the simulator's turns) at ``ceilings`` (one call's
    worst cost, per model); None for a model whose worst case is unknown."""
    simulated = spec.user_model is not None and spec.scenario.user is not None
    turns = spec.user_max_turns if simulated else len(spec.scenario.turns)
    calls = {spec.model.name: turns * (spec.step_limit + MEMORY_CALLS_PER_TURN)}
    if simulated and spec.user_model is not None:
        calls[spec.user_model.name] = calls.get(spec.user_model.name, 0) + turns
    out: dict[str, float | None] = {}
    for model, count in calls.items():
        ceiling = ceilings.get(model)
        known = ceiling is not None and (spec.agent.builtin or model != spec.model.name)
        out[model] = count * ceiling if known and ceiling is not None else None
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
    ceilings: Mapping[str, float | None] = field(default_factory=dict)
    """Model name -> the most one call of it may cost (None or absent: unknown)."""
    reserved: dict[str, dict[str, float]] = field(default_factory=dict)
    """Attempt in flight -> what it holds of each model's spend until it ends."""
    largest: dict[str, float] = field(default_factory=dict)
    """Model name -> the largest cost of one finished attempt of it (the estimate of an attempt
    whose worst case is unknown)."""
    _said: bool = False

    def add(self, charges: Iterable[Charge], attempt: str | None = None) -> None:
        """A finished attempt's charges (or a resumed run's recorded ones); its reservation,
        if it had one, is released."""
        self.reserved.pop(attempt or "", None)
        unknown = False
        cost: dict[str, float] = {}
        for charge in charges:
            usd = charge.usd(self.prices.get(charge.model))
            if usd is None:
                unknown = True
            elif charge.calls:  # an attempt that called nothing says nothing of the cost
                cost[charge.model] = cost.get(charge.model, 0.0) + usd
        for model, usd in cost.items():
            self.spent[model] = self.spent.get(model, 0.0) + usd
            self.largest[model] = max(self.largest.get(model, 0.0), usd)
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

    def reserve(self, attempt: str, worst: Mapping[str, float | None]) -> None:
        """An attempt starting: its worst case held (``worst_case``), or for a model whose
        worst case is unknown, the largest finished attempt's cost (none yet: everything)."""
        self.reserved[attempt] = {m: w if w is not None else self.largest.get(m, math.inf)
                                  for m, w in worst.items()}

    def held(self, model: str | None = None) -> float:
        """What the attempts in flight hold (of ``model``, or of every model)."""
        return sum(usd for hold in self.reserved.values() for m, usd in hold.items()
                   if model is None or m == model)

    def fits(self, models: Iterable[str]) -> bool:
        """May an attempt calling these models start now: no cap reached, and what was spent
        and is held by attempts in flight under every cap it counts against?"""
        names = list(models)
        if not self.allows(names):
            return False
        if self.caps.sweep is not None and self.total + self.held() >= self.caps.sweep:
            return False
        return all(self.spent.get(m, 0.0) + self.held(m) < self.caps.models[m]
                   for m in names if m in self.caps.models)

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
