"""The files a release decision reads: the gate config (thresholds) and the review file
(acknowledged expectation changes). YAML, validated with ``extra='forbid'``: a mistake is a
``CatalogError`` naming ``file:line: field``, and the command exits 2 before deciding anything.

With no gate file and no thresholds recorded by the run, the default gate decides: every key at
its default, so a new regression in any cell, or a paired-bootstrap interval wholly below zero,
blocks; no rate, cost or latency limit applies (the verdict's notes say which are not set).

gate.yaml::

    overall_pass_rate: 0.98          # fraction of the candidate's final trials that passed
    critical_pass_rate: 1.0          # the same over critical scenarios
    max_latency_regression_percent: 20   # p95 trial latency, candidate over baseline
    max_cost_usd: 5.0                # total reported cost of the candidate run
    max_cost_regression_percent: 10  # cost per trial, candidate over baseline
    max_pass_rate_drop: 0.05         # block when the bootstrap interval's low end < -0.05
    unknown_cost: block              # block (default) or pass, when cost is not reported
    unknown_latency: block
    latency_floor_ms: 250            # a p95 increase up to 250 ms is noise (default 250)
    cost_floor_usd: 0.001            # a cost-per-trial increase up to this is noise (default)
    min_paired_trials: 10            # fewer pairs measured on both runs: no regression read
    regressions: any                 # any (default): every newly regressed cell blocks;
                                     # critical: only critical scenarios' (others: notes)
    interval_below_zero: block       # block (default) or note, when the whole interval < 0
    critical: [V1]                   # more critical scenario ids (besides "critical": true)

review.yaml::

    reviews:
      - scenario_id: V1
        old_sha256: 3f1c...
        new_sha256: 9ab2...
        reason: the contract changed: a room for 6 is now a valid answer
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from pipeline.catalog import CatalogError
from pipeline.catalog.located import read_yaml_mapping, validate_located
from reports.expectations import Review
from reports.gate import IntervalPolicy, RegressionPolicy, Thresholds, UnknownPolicy


class GateConfig(BaseModel):
    """The shape of a gate config file (every key optional; unknown keys refused)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    overall_pass_rate: float | None = Field(default=None, ge=0, le=1)
    critical_pass_rate: float | None = Field(default=None, ge=0, le=1)
    max_latency_regression_percent: float | None = Field(default=None, ge=0)
    max_cost_usd: float | None = Field(default=None, ge=0)
    max_cost_regression_percent: float | None = Field(default=None, ge=0)
    max_pass_rate_drop: float | None = Field(default=None, ge=0, le=1)
    unknown_cost: UnknownPolicy | None = None
    unknown_latency: UnknownPolicy | None = None
    latency_floor_ms: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    cost_floor_usd: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    min_paired_trials: int | None = Field(default=None, ge=1)
    regressions: RegressionPolicy | None = None
    interval_below_zero: IntervalPolicy | None = None
    critical: list[str] = Field(default_factory=list)


class ReviewEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    scenario_id: str = Field(min_length=1)
    old_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    new_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    reason: str = Field(min_length=1)


class ReviewFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    reviews: list[ReviewEntry] = Field(default_factory=list)


def load_gate_config(path: Path) -> GateConfig:
    data, lines = read_yaml_mapping(path, "a gate config")
    return validate_located(GateConfig, data, path, lines)


def load_reviews(path: Path) -> list[Review]:
    data, lines = read_yaml_mapping(path, "a review file")
    parsed = validate_located(ReviewFile, data, path, lines)
    return [Review(r.scenario_id, r.old_sha256, r.new_sha256, r.reason) for r in parsed.reviews]


def recorded_gate_config(recorded: dict[str, Any], run_id: str) -> GateConfig:
    """The thresholds a run recorded (runs.config_json), validated like a gate file."""
    try:
        return GateConfig.model_validate(recorded)
    except ValueError as exc:
        raise CatalogError(f"runs.config_json of run {run_id}", None, "thresholds",
                           str(exc).splitlines()[-1].strip()) from None


def thresholds(recorded: GateConfig, file: GateConfig | None) -> Thresholds:
    """The run's recorded thresholds, with the gate file's keys winning where it sets them."""
    merged = recorded.model_dump(exclude_none=True, exclude={"critical"})
    if file is not None:
        merged.update(file.model_dump(exclude_none=True, exclude={"critical"},
                                      exclude_unset=True))
    return Thresholds(**merged)


def check_decision_files(gate: str | None, review: str | None) -> None:
    """A flow program's gate config and review file read before anything runs: a mistake is
    the ``CatalogError`` the decision would raise hours later."""
    if gate is not None:
        load_gate_config(Path(gate))
    if review is not None:
        load_reviews(Path(review))
