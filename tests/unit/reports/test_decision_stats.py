"""pass^k is C(c,k)/C(n,k) (checked by enumerating subsets); the paired bootstrap's percentile
interval matches a hand-computed reference and an independent recomputation on shared inputs
(statistics.quantiles, method 'inclusive', is numpy's / scipy's linear percentile)."""

from __future__ import annotations

import random
import statistics
from itertools import combinations
from math import comb

import pytest

from reports.bootstrap import interval_from_indices, paired_bootstrap, percentile
from reports.transitions import classify, pass_hat_k, pass_hat_ks


@pytest.mark.parametrize(("c", "n"), [(0, 3), (1, 3), (2, 3), (3, 3), (7, 10), (4, 5)])
def test_pass_hat_k_is_the_unbiased_estimator(c: int, n: int) -> None:
    outcomes = [True] * c + [False] * (n - c)
    for k in range(1, n + 1):
        subsets = list(combinations(outcomes, k))
        by_enumeration = sum(all(s) for s in subsets) / len(subsets)
        assert pass_hat_k(c, n, k) == pytest.approx(by_enumeration)
        assert pass_hat_k(c, n, k) == pytest.approx(comb(c, k) / comb(n, k))
    assert pass_hat_ks(2, 3) == [pytest.approx(2 / 3), pytest.approx(1 / 3), 0.0]
    assert pass_hat_k(2, 3, 2) != pytest.approx((2 / 3) ** 2)  # not (c/n)^k


def test_pass_hat_k_refuses_impossible_counts() -> None:
    with pytest.raises(ValueError):
        pass_hat_k(4, 3, 1)
    with pytest.raises(ValueError):
        pass_hat_k(1, 3, 0)


@pytest.mark.parametrize(("base", "cand", "expected"), [
    (3, 0, "new_failure"), (3, 1, "stability_regression"), (3, 2, "stability_regression"),
    (0, 3, "fixed"), (1, 3, "fixed"), (1, 2, "flaky"), (0, 1, "flaky"), (2, 0, "flaky"),
    (3, 3, "unchanged"), (0, 0, "unchanged")])
def test_transition_classes(base: int, cand: int, expected: str) -> None:
    assert classify(base, cand, 3) == expected
    assert classify(0, 0, 0) == "unpaired"


def test_the_percentile_interval_against_a_hand_computed_reference() -> None:
    """Four scenarios' differences and five draws written out: the draw means are
    (0.5+0.5-0.5+0)/4 = 0.125, (1+1+1+1)/4 = 1, (-0.5-0.5+0+0)/4 = -0.25,
    (0.5+1-0.5+0)/4 = 0.25, (0+0+0+1)/4 = 0.25; sorted -0.25, 0.125, 0.25, 0.25, 1.
    90% two-sided: the 5% point sits at 0.05*4 = 0.2 between -0.25 and 0.125 -> -0.175; the
    95% point at 3.8 between 0.25 and 1 -> 0.85."""
    differences = [0.5, -0.5, 0.0, 1.0]
    draws = [[0, 0, 1, 2], [3, 3, 3, 3], [1, 1, 2, 2], [0, 3, 1, 2], [2, 2, 2, 3]]
    low, high = interval_from_indices(differences, draws, 0.9)
    assert (round(low, 3), round(high, 3)) == (-0.175, 0.85)
    assert percentile([1.0, 2.0], 0.5) == 1.5


def _reference(base: list[float], cand: list[float], seed: int, resamples: int,
               confidence: float) -> tuple[float, float]:
    """The same resampling written plainly: scenario pairs drawn together, the statistic
    mean(cand) - mean(base) over the draw, cut points by the standard library."""
    rng = random.Random(seed)
    n = len(base)
    stats = []
    for _ in range(resamples):
        drawn = [rng.randrange(n) for _ in range(n)]
        stats.append(statistics.fmean(cand[i] for i in drawn)
                     - statistics.fmean(base[i] for i in drawn))
    alpha = (1 - confidence) / 2
    cuts = statistics.quantiles(stats, n=1000, method="inclusive")
    return cuts[round(alpha * 1000) - 1], cuts[round((1 - alpha) * 1000) - 1]


def test_the_bootstrap_matches_the_reference_on_shared_inputs() -> None:
    """The three-errors method's shape: seven scenarios, ten repeats per prompt version (rates in
    tenths)."""
    base = [1.0, 0.9, 0.0, 1.0, 0.5, 0.8, 0.7]
    cand = [1.0, 0.8, 0.1, 1.0, 0.6, 0.6, 0.7]
    got = paired_bootstrap(base, cand, seed=7, resamples=5000, confidence=0.9)
    low, high = _reference(base, cand, 7, 5000, 0.9)
    assert (round(got.low, 3), round(got.high, 3)) == (round(low, 3), round(high, 3))
    assert got.low < got.estimate < got.high
    assert got.estimate == pytest.approx(sum(c - b for b, c in zip(base, cand, strict=True)) / 7)
    again = paired_bootstrap(base, cand, seed=7, resamples=5000, confidence=0.9)
    assert (again.low, again.high) == (got.low, got.high)  # the seed fixes the interval
    wider = paired_bootstrap(base, cand, seed=7, resamples=5000, confidence=0.99)
    assert wider.low <= got.low and wider.high >= got.high


def test_identical_pairs_have_a_zero_width_interval() -> None:
    got = paired_bootstrap([0.2, 0.4, 0.9], [0.2, 0.4, 0.9])
    assert (got.low, got.estimate, got.high) == (0.0, 0.0, 0.0)
