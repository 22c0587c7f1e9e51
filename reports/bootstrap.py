"""The paired bootstrap of the difference in pass rate between two runs (the three-errors method).

Units are scenarios: a resample draws scenarios with replacement and keeps each drawn scenario's
baseline and candidate rates together; the statistic is the mean over the drawn scenarios of
(candidate rate - baseline rate). The interval is the percentile interval (linear interpolation
between order statistics, as numpy's default and ``scipy.stats.bootstrap(method='percentile')``).
Pure Python with ``random.Random(seed)``: the same seed gives the same interval everywhere.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

DEFAULT_SEED = 7
DEFAULT_RESAMPLES = 5000
DEFAULT_CONFIDENCE = 0.9


@dataclass(frozen=True)
class Interval:
    estimate: float
    """The observed difference (candidate - baseline), mean over scenarios."""
    low: float
    high: float
    confidence: float
    resamples: int
    seed: int
    scenarios: int


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) of sorted values, linear interpolation (numpy 'linear')."""
    if not sorted_values:
        raise ValueError("percentile of no values")
    position = q * (len(sorted_values) - 1)
    lower = int(position)
    upper = min(lower + 1, len(sorted_values) - 1)
    fraction = position - lower
    return sorted_values[lower] + (sorted_values[upper] - sorted_values[lower]) * fraction


def resample_indices(n: int, resamples: int, seed: int) -> list[list[int]]:
    """``resamples`` draws of n indices in 0..n-1 with replacement, from ``seed``."""
    bits = random.Random(seed).getrandbits
    width = n.bit_length()

    def below_n() -> int:  # ``randrange(n)``'s own draw, without its argument checks
        drawn = bits(width)
        while drawn >= n:
            drawn = bits(width)
        return drawn

    return [[below_n() for _ in range(n)] for _ in range(resamples)]


def interval_from_indices(differences: Sequence[float], draws: Sequence[Sequence[int]],
                          confidence: float) -> tuple[float, float]:
    """The percentile interval of the mean difference over the given draws."""
    at = differences.__getitem__
    stats = sorted(sum(map(at, draw)) / len(draw) for draw in draws)
    alpha = (1.0 - confidence) / 2.0
    return percentile(stats, alpha), percentile(stats, 1.0 - alpha)


def paired_bootstrap(baseline: Sequence[float], candidate: Sequence[float],
                     seed: int = DEFAULT_SEED, resamples: int = DEFAULT_RESAMPLES,
                     confidence: float = DEFAULT_CONFIDENCE) -> Interval:
    """Interval of mean(candidate - baseline) over scenarios, resampling scenarios (pairs)."""
    if len(baseline) != len(candidate) or not baseline:
        raise ValueError("the paired bootstrap needs the same number (> 0) of baseline and "
                         "candidate scenario rates")
    if not 0.0 < confidence < 1.0 or resamples < 1:
        raise ValueError(f"confidence must be in (0, 1) and resamples >= 1, got {confidence}, "
                         f"{resamples}")
    differences = [c - b for b, c in zip(baseline, candidate, strict=True)]
    draws = resample_indices(len(differences), resamples, seed)
    low, high = interval_from_indices(differences, draws, confidence)
    estimate = sum(differences) / len(differences)
    return Interval(estimate, low, high, confidence, resamples, seed, len(differences))
