"""Per-cell transitions between two runs: k/n in the baseline -> k/n in the candidate over
paired repeats, classed (``warehouse.schema.TransitionClass``), and pass^k per cell.

pass^k is the tau-bench estimator: the chance that k repeats drawn without replacement from the
n observed all pass, C(c, k) / C(n, k) for c passes of n; not (c/n)^k.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb

import polars as pl

from reports.paired import SUFFIX, PairedRuns
from warehouse.schema import TransitionClass


def pass_hat_k(passed: int, n: int, k: int) -> float:
    """C(passed, k) / C(n, k): the probability that k of the n repeats, drawn without
    replacement, all passed."""
    if not 0 <= passed <= n or not 1 <= k <= n:
        raise ValueError(f"pass^k needs 0 <= c <= n and 1 <= k <= n, got c={passed} n={n} k={k}")
    return comb(passed, k) / comb(n, k)


def pass_hat_ks(passed: int, n: int) -> list[float]:
    """pass^k for k = 1..n."""
    return [pass_hat_k(passed, n, k) for k in range(1, n + 1)]


def classify(base_k: int, cand_k: int, n: int) -> TransitionClass:
    """The class of k_base/n -> k_cand/n (paired repeats, so the same n)."""
    if n == 0:
        return "unpaired"
    base_all, cand_all = base_k == n, cand_k == n
    if base_all and cand_k == 0:
        return "new_failure"
    if base_all and not cand_all:
        return "stability_regression"
    if cand_all and not base_all:
        return "fixed"
    if (base_all and cand_all) or (base_k == 0 and cand_k == 0):
        return "unchanged"
    return "flaky"


REGRESSIONS: frozenset[TransitionClass] = frozenset({"new_failure", "stability_regression"})


@dataclass(frozen=True)
class CellTransition:
    scenario_id: str
    prompt_id: str
    memory_mode: str
    baseline_model: str
    candidate_model: str
    critical: bool
    baseline_k: int
    candidate_k: int
    n: int
    transition: TransitionClass
    baseline_sha256: str
    candidate_sha256: str

    @property
    def label(self) -> str:
        return f"{self.baseline_k}/{self.n} -> {self.candidate_k}/{self.n}"

    @property
    def cell(self) -> str:
        model = (self.candidate_model if self.baseline_model == self.candidate_model
                 else f"{self.baseline_model}->{self.candidate_model}")
        return f"{self.scenario_id}/{model}/{self.prompt_id}/{self.memory_mode}"

    @property
    def regressed(self) -> bool:
        return self.transition in REGRESSIONS

    def pass_hat_k(self) -> tuple[list[float], list[float]]:
        """pass^k for k = 1..n in the baseline and in the candidate."""
        if self.n == 0:
            return [], []
        return pass_hat_ks(self.baseline_k, self.n), pass_hat_ks(self.candidate_k, self.n)


def transitions(paired: PairedRuns, critical: frozenset[str]) -> list[CellTransition]:
    """One transition per cell that has a pair (a cell whose pairs are all incomplete on a
    side is ``unpaired``)."""
    key = paired.cell_key
    final = paired.final_pairs()
    counts = final.group_by(key).agg(
        pl.col("passed").fill_null(False).sum().alias("bk"),
        pl.col(f"passed{SUFFIX}").fill_null(False).sum().alias("ck"),
        pl.len().alias("n"))
    cells = paired.pairs.group_by(key).agg(
        pl.col("model").first().alias("bm"), pl.col(f"model{SUFFIX}").first().alias("cm"),
        pl.col("scenario_sha256").first().alias("bs"),
        pl.col(f"scenario_sha256{SUFFIX}").first().alias("cs"))
    joined = cells.join(counts, on=key, how="left").sort(key)
    return [_transition(row, critical) for row in joined.iter_rows(named=True)]


def _transition(row: dict[str, object], critical: frozenset[str]) -> CellTransition:
    n = int(row["n"] or 0)  # type: ignore[call-overload]
    bk = int(row["bk"] or 0)  # type: ignore[call-overload]
    ck = int(row["ck"] or 0)  # type: ignore[call-overload]
    scenario = str(row["scenario_id"])
    return CellTransition(
        scenario, str(row["prompt_id"]), str(row["memory_mode"]), str(row["bm"]),
        str(row["cm"]), scenario in critical, bk, ck, n, classify(bk, ck, n),
        str(row["bs"]), str(row["cs"]))
