"""What a change costs: cost, tokens, latency (p50 / p95) and tool calls per trial in each run,
and their deltas. Null-aware: a run in which any trial's figure is unknown has that figure
unknown (null), and a delta with an unknown side is unknown; never 0."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

import polars as pl

from reports.paired import SUFFIX, PairedRuns

Figure = Literal["cost_usd_per_trial", "input_tokens_per_trial", "output_tokens_per_trial",
                 "latency_ms_p50", "latency_ms_p95", "tool_calls_per_trial"]
FIGURES: tuple[Figure, ...] = get_args(Figure)


@dataclass(frozen=True)
class UsageDelta:
    figure: Figure
    baseline: float | None
    candidate: float | None
    pairs: int = 0
    """Paired trials the figure was measured over (both of each pair final)."""

    @property
    def delta(self) -> float | None:
        if self.baseline is None or self.candidate is None:
            return None
        return self.candidate - self.baseline

    @property
    def percent(self) -> float | None:
        delta = self.delta
        if delta is None or not self.baseline:
            return None
        return 100.0 * delta / self.baseline


def _known_mean(column: pl.Series) -> float | None:
    if column.is_empty() or column.null_count():
        return None
    return float(column.cast(pl.Float64).mean())  # type: ignore[arg-type]


def _known_quantile(column: pl.Series, q: float) -> float | None:
    if column.is_empty() or column.null_count():
        return None
    value = column.cast(pl.Float64).quantile(q, interpolation="linear")
    return None if value is None else float(value)


def figures(trials: pl.DataFrame, suffix: str = "") -> dict[Figure, float | None]:
    """The figures over these trials (columns named with ``suffix``)."""
    def col(name: str) -> pl.Series:
        return trials[f"{name}{suffix}"]

    return {
        "cost_usd_per_trial": _known_mean(col("cost_usd")),
        "input_tokens_per_trial": _known_mean(col("input_tokens")),
        "output_tokens_per_trial": _known_mean(col("output_tokens")),
        "latency_ms_p50": _known_quantile(col("latency_ms"), 0.5),
        "latency_ms_p95": _known_quantile(col("latency_ms"), 0.95),
        "tool_calls_per_trial": _known_mean(col("tool_calls")),
    }


def usage_deltas(paired: PairedRuns) -> list[UsageDelta]:
    """Figures over the pairs with a final outcome on both sides (like against like)."""
    final = paired.final_pairs()
    base, cand = figures(final), figures(final, SUFFIX)
    return [UsageDelta(name, base[name], cand[name], final.height) for name in FIGURES]
