"""Release thresholds of a sweep (the regression-suite method's run config): what the admission
gate compares a
run against. They are stored with the run (``runs.config_json``: ``thresholds``) so the gate
reads them from the warehouse; nothing here judges a run.

Rates are shares in [0, 1]; percents are relative increases over the baseline, >= 0; costs are
US dollars, >= 0. Every field is optional: null means "no limit of this kind".
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Thresholds(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    critical_pass_rate: float | None = Field(default=None, ge=0, le=1, allow_inf_nan=False,
                                             description=(
        "Least share of critical scenarios' trials that must pass (1.0: every one)."))
    overall_pass_rate: float | None = Field(default=None, ge=0, le=1, allow_inf_nan=False,
                                            description=(
        "Least share of all complete trials that must pass."))
    max_latency_regression_percent: float | None = Field(
        default=None, ge=0, allow_inf_nan=False, description=(
            "Largest allowed increase of p95 trial latency over the baseline, in percent."))
    max_cost_usd: float | None = Field(default=None, ge=0, allow_inf_nan=False, description=(
        "Largest allowed total cost of the run in USD (unknown cost is never taken as 0)."))
    max_cost_regression_percent: float | None = Field(
        default=None, ge=0, allow_inf_nan=False, description=(
            "Largest allowed increase of the cost per trial over the baseline, in percent."))
