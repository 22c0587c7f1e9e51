"""Expectation changes: scenarios whose content hash differs between the two runs. The candidate
changed them together with whatever it changes, so a person must review each one (scenario id,
old hash, new hash, reason) before the gate admits (the regression-suite method: never change a
prompt and its
expectations in one unreviewed step)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from reports.paired import SUFFIX, ComparisonInputError, PairedRuns


@dataclass(frozen=True)
class Review:
    """A person's acknowledgement of one expectation change."""

    scenario_id: str
    old_sha256: str
    new_sha256: str
    reason: str


@dataclass(frozen=True)
class ExpectationChange:
    scenario_id: str
    old_sha256: str
    new_sha256: str
    review: Review | None
    """The review that acknowledges exactly this change (old and new hash), or None."""

    @property
    def reviewed(self) -> bool:
        return self.review is not None


def _changed(paired: PairedRuns) -> list[tuple[str, str, str]]:
    rows = (paired.pairs.filter(pl.col("scenario_sha256") != pl.col(f"scenario_sha256{SUFFIX}"))
            .select("scenario_id", "scenario_sha256", f"scenario_sha256{SUFFIX}")
            .unique().sort("scenario_id", "scenario_sha256"))
    return [(str(a), str(b), str(c)) for a, b, c in rows.iter_rows()]


def expectation_changes(paired: PairedRuns, reviews: Sequence[Review] = ()
                        ) -> list[ExpectationChange]:
    """Every changed scenario, with the review that acknowledges it. A review naming a scenario
    neither run holds is bad input (ComparisonInputError)."""
    known = set(paired.base["scenario_id"].to_list()) | set(paired.cand["scenario_id"].to_list())
    unknown = sorted({r.scenario_id for r in reviews} - known)
    if unknown:
        raise ComparisonInputError(f"the review file names scenario(s) neither run holds: "
                                   f"{', '.join(unknown)}")
    found = []
    for scenario, old, new in _changed(paired):
        review = next((r for r in reviews if (r.scenario_id, r.old_sha256, r.new_sha256)
                       == (scenario, old, new)), None)
        found.append(ExpectationChange(scenario, old, new, review))
    return found


def stale_reviews(changes: Sequence[ExpectationChange], reviews: Sequence[Review]
                  ) -> list[Review]:
    """Reviews of a known scenario whose hashes match no change of these runs (an old review,
    or a typo): reported, never taken as an acknowledgement."""
    used = {id(c.review) for c in changes if c.review is not None}
    return [r for r in reviews if id(r) not in used]
