"""A sweep's spend caps (``max_cost_usd`` of the sweep and of each model): which models they
cover, which of those have no known cost, the driver's ``SpendBook`` (resumed from what the run
recorded), and how a sweep that reached a cap ends (``SpendCapReached``: exit 3, resumable).

The counting itself is pipeline.execution.spend; prices are pipeline.models.pricing.
"""

from __future__ import annotations

from collections.abc import Callable

from pipeline.execution.spend import Charge, SpendBook, SpendCaps
from pipeline.models.config import ModelConfig
from pipeline.models.pricing import Price, call_ceiling, list_price
from pipeline.sweep.config import SweepConfig
from warehouse.location import Root


class SpendCapReached(RuntimeError):
    """The sweep stopped starting attempts at a spend cap; ``statuses`` are the final statuses
    of the trials it ran."""

    def __init__(self, line: str, statuses: dict[str, int]) -> None:
        super().__init__(line)
        self.statuses = statuses


def spend_caps(config: SweepConfig) -> SpendCaps:
    return SpendCaps(config.max_cost_usd, {m.name: m.max_cost_usd for m in config.called_models()
                                           if m.max_cost_usd is not None})


def capped_models(config: SweepConfig) -> list[ModelConfig]:
    """The models a cap counts: every model (the user simulator's too) under a sweep cap,
    else those with a cap of their own."""
    models = config.called_models()
    if config.max_cost_usd is not None:
        return models
    return [m for m in models if m.max_cost_usd is not None]


def unpriced(models: list[ModelConfig],
             price: Callable[[ModelConfig], Price | None] = list_price) -> list[str]:
    """The names of ``models`` whose cost is unknown: no list price. (A provider may report
    costs of its own, but nothing says so before it answers.)"""
    return [m.name for m in models if price(m) is None]


def unknown_cost_problem(config: SweepConfig) -> str | None:
    """Why the caps cannot be kept (a capped model of unknown cost), or None."""
    if config.unknown_cost == "allow" or not spend_caps(config):
        return None
    names = unpriced(capped_models(config))
    if not names:
        return None
    return (f"the cost of {', '.join(names)} is unknown (no price in LiteLLM's table, none "
            "reported before it answers), so a spend cap cannot count it; set "
            "unknown_cost: allow to run it uncounted, or leave the cap out")


def spend_book(config: SweepConfig, run_id: str,
               on_reached: Callable[[str], None] | None = None) -> SpendBook | None:
    """The driver's spend book, with what the run already recorded (a resume); None without
    a cap."""
    caps = spend_caps(config)
    if not caps:
        return None
    models = capped_models(config)
    book = SpendBook(caps, {m.name: list_price(m) for m in models},
                     ceilings={m.name: call_ceiling(m) for m in models})
    for charges in recorded_charges(config.warehouse, run_id):
        book.add(charges)
    book.on_reached = on_reached
    return book


def recorded_charges(root: Root, run_id: str) -> list[list[Charge]]:
    """Every trial row the run has written (incomplete ones too: they were paid), as charges."""
    from warehouse.query import run_named  # duckdb: only the driver needs it

    out = []
    for row in run_named(root, "run_spend", {"run_id": run_id}).rows:
        model, calls, cost, inp, outp, user, user_calls, user_cost, user_in, user_out = row
        charges = [Charge(str(model), int(calls or 0), cost, inp, outp)]
        if user is not None:
            charges.append(Charge(str(user), int(user_calls or 0), user_cost, user_in, user_out))
        out.append(charges)
    return out
