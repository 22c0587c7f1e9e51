"""Compare two runs and decide: transitions, pass^k, usage deltas, expectation changes, the
paired bootstrap interval and the gate's verdict, as one ``Decision``; stored in the
``comparisons`` table (one row per paired cell) and rendered as JSON."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

import polars as pl

from reports.bootstrap import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Interval,
    paired_bootstrap,
)
from reports.expectations import ExpectationChange, Review, expectation_changes, stale_reviews
from reports.gate import DEFAULT_GATE, GateInput, GateResult, Thresholds, decide_gate
from reports.paired import SUFFIX, PairedRuns, only_in, pair_runs
from reports.transitions import CellTransition, transitions
from reports.usage import UsageDelta, usage_deltas
from warehouse.location import Root
from warehouse.query import run_named
from warehouse.rows import ComparisonRow
from warehouse.writer import WarehouseWriter

THRESHOLD_KEYS = ("overall_pass_rate", "critical_pass_rate", "max_latency_regression_percent",
                  "max_cost_usd", "max_cost_regression_percent", "max_pass_rate_drop",
                  "unknown_cost", "unknown_latency", "latency_floor_ms", "cost_floor_usd",
                  "min_paired_trials", "regressions", "interval_below_zero")


@dataclass(frozen=True)
class BootstrapOptions:
    seed: int = DEFAULT_SEED
    resamples: int = DEFAULT_RESAMPLES
    confidence: float = DEFAULT_CONFIDENCE


@dataclass(frozen=True, eq=False)
class Decision:
    comparison_id: str
    compared_at: datetime
    paired: PairedRuns
    transitions: list[CellTransition]
    changes: list[ExpectationChange]
    deltas: list[UsageDelta]
    interval: Interval | None
    gate: GateResult
    options: BootstrapOptions

    @property
    def baseline(self) -> str:
        return self.paired.baseline

    @property
    def candidate(self) -> str:
        return self.paired.candidate

    def regressions(self) -> list[CellTransition]:
        return [t for t in self.transitions if t.regressed]


def recorded_thresholds(root: Root, run_id: str) -> dict[str, Any]:
    """The gate threshold keys of the run's recorded config (``runs.config_json``), top level
    or under ``thresholds``; empty when the run recorded none."""
    rows = run_named(root, "run_config", {"run_id": run_id}).rows
    if not rows or rows[0][0] is None:
        return {}
    config = json.loads(str(rows[0][0]))
    found: dict[str, Any] = {}
    for source, skip in ((config, SPEND_CAP_KEYS), (config.get("thresholds") or {}, ())):
        if isinstance(source, dict):
            found.update({k: v for k, v in source.items()
                          if k in THRESHOLD_KEYS and k not in skip and v is not None})
    return found


SPEND_CAP_KEYS = ("max_cost_usd", "unknown_cost")
"""Top-level keys of a sweep's config that mean its spend cap (pipeline.sweep.config), not the
gate thresholds of the same name (those are under ``thresholds``)."""


def scenario_rates(paired: PairedRuns) -> tuple[list[float], list[float]]:
    """Per scenario (the bootstrap's unit), the pass rate over its final pairs in each run."""
    rates = (paired.final_pairs()
             .group_by("scenario_id")
             .agg(pl.col("passed").fill_null(False).cast(pl.Float64).mean().alias("b"),
                  pl.col(f"passed{SUFFIX}").fill_null(False).cast(pl.Float64).mean().alias("c"))
             .sort("scenario_id"))
    return [float(v) for v in rates["b"]], [float(v) for v in rates["c"]]


def decide(root: Root, baseline: str, candidate: str, *, critical: frozenset[str] = frozenset(),
           reviews: Sequence[Review] = (), thresholds: Thresholds | None = None,
           options: BootstrapOptions | None = None, notes: Sequence[str] = (),
           source: str = DEFAULT_GATE) -> Decision:
    """Everything ``agentsweep compare`` prints and ``agentsweep gate`` decides on (``notes``:
    the caller's, added to the gate's; ``source``: where ``thresholds`` came from)."""
    options = options or BootstrapOptions()
    paired = pair_runs(root, baseline, candidate)
    cells = transitions(paired, critical)
    changes = expectation_changes(paired, reviews)
    deltas = usage_deltas(paired)
    base_rates, cand_rates = scenario_rates(paired)
    interval = (paired_bootstrap(base_rates, cand_rates, options.seed, options.resamples,
                                 options.confidence) if base_rates else None)
    dropped, added = only_in(paired)
    gate = decide_gate(GateInput(paired.cand, critical, cells, changes,
                                 stale_reviews(changes, reviews), deltas, interval, dropped,
                                 added, paired.base, paired.baseline, paired.candidate),
                       thresholds or Thresholds(), source)
    gate.notes.extend(notes)
    return Decision(uuid.uuid4().hex, datetime.now(UTC), paired, cells, changes, deltas,
                    interval, gate, options)


def comparison_rows(decision: Decision) -> list[ComparisonRow]:
    reviewed = {c.scenario_id: c.reviewed for c in decision.changes}
    interval = decision.interval
    return [ComparisonRow(
        run_id=decision.candidate, comparison_id=decision.comparison_id,
        baseline_run_id=decision.baseline, compared_at=decision.compared_at,
        scenario_id=t.scenario_id, prompt_id=t.prompt_id, memory_mode=t.memory_mode,
        baseline_model=t.baseline_model, candidate_model=t.candidate_model,
        critical=t.critical, baseline_k=t.baseline_k, baseline_n=t.n,
        candidate_k=t.candidate_k, candidate_n=t.n, transition=t.transition,
        baseline_sha256=t.baseline_sha256, candidate_sha256=t.candidate_sha256,
        expectation_changed=t.baseline_sha256 != t.candidate_sha256,
        reviewed=reviewed.get(t.scenario_id), verdict=decision.gate.verdict,
        reasons=list(decision.gate.reasons),
        pass_rate_delta=interval.estimate if interval else None,
        interval_low=interval.low if interval else None,
        interval_high=interval.high if interval else None,
        confidence=decision.options.confidence, resamples=decision.options.resamples,
        seed=decision.options.seed) for t in decision.transitions]


def store_decision(root: Root, decision: Decision) -> None:
    """Write the decision record (one row per cell) through the warehouse writer."""
    rows = [r.as_dict() for r in comparison_rows(decision)]
    WarehouseWriter(root, decision.candidate).write_batch({"comparisons": rows})


def _transition_json(t: CellTransition) -> dict[str, Any]:
    base_k, cand_k = t.pass_hat_k()
    return {"scenario_id": t.scenario_id, "prompt_id": t.prompt_id,
            "memory_mode": t.memory_mode, "baseline_model": t.baseline_model,
            "candidate_model": t.candidate_model, "critical": t.critical,
            "baseline": f"{t.baseline_k}/{t.n}", "candidate": f"{t.candidate_k}/{t.n}",
            "transition": t.transition, "pass_hat_k_baseline": base_k,
            "pass_hat_k_candidate": cand_k}


def decision_json(decision: Decision) -> dict[str, Any]:
    """The decision as JSON-able data (``agentsweep compare --format json``)."""
    interval = decision.interval
    return {
        "comparison_id": decision.comparison_id, "baseline": decision.baseline,
        "candidate": decision.candidate, "paired_by_model": decision.paired.by_model,
        "transitions": [_transition_json(t) for t in decision.transitions],
        "expectation_changes": [
            {"scenario_id": c.scenario_id, "old_sha256": c.old_sha256,
             "new_sha256": c.new_sha256, "reviewed": c.reviewed,
             "reason": c.review.reason if c.review else None} for c in decision.changes],
        "deltas": [{"figure": d.figure, "baseline": d.baseline, "candidate": d.candidate,
                    "delta": d.delta, "percent": d.percent, "paired_trials": d.pairs}
                   for d in decision.deltas],
        "bootstrap": None if interval is None else {
            "estimate": interval.estimate, "low": interval.low, "high": interval.high,
            "confidence": interval.confidence, "resamples": interval.resamples,
            "seed": interval.seed, "scenarios": interval.scenarios},
        "gate": {"verdict": decision.gate.verdict, "reasons": decision.gate.reasons,
                 "notes": decision.gate.notes, "exit_code": decision.gate.exit_code,
                 "thresholds": {"source": decision.gate.source,
                                **asdict(decision.gate.thresholds)},
                 "line": verdict_line(decision)},
    }


def verdict_line(decision: Decision, detail: str = "") -> str:
    """The decision in one line, as every door ends with it (a flow program's last line, the
    Prefect state's message): verdict, the pair, how many reasons, the thresholds' source,
    ``detail`` (the caller's), and the exit code."""
    gate = decision.gate
    return (f"{gate.verdict.upper()}: {decision.candidate} against {decision.baseline}: "
            f"{len(gate.reasons) or 'no'} reason(s) to block [{gate.source}]"
            + (f"; {detail}" if detail else "") + f"; exit {gate.exit_code}")
