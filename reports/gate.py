"""The admission gate (the regression-suite method + 004): may the candidate ship?

admit = no new regression (in any cell by default; in a critical scenario with ``regressions:
critical``) AND no paired-bootstrap interval wholly below zero (by default) AND overall (and
critical) pass rate >= their thresholds AND cost and latency within their limits AND every
expectation change reviewed; and, whatever the interval says, any ``incomplete`` trial, any
state violation (``score_state`` = 0) or contract violation (a vetoed forbidden call, or an
``agent_error`` reply that broke its format) in the candidate blocks. Every reason that
applies is listed, never just the first. Unknown cost or latency under a limit is a reason
(or, when the thresholds say so, an explicit pass written in the notes), never a silent 0.

A latency or cost *regression* limit is evidence about the model, so it applies only when
there is some: both runs measured the figure on at least ``min_paired_trials`` pairs, the
increase exceeds an absolute floor (``latency_floor_ms``, ``cost_floor_usd``: below it the
percent is noise, e.g. CPU contention on a busy machine), and for latency neither run's models
answered in process (reference models have no latency of their own). Short of that the gate
writes a "not enough evidence" note where the limit would have been a reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import polars as pl

from reports.bootstrap import Interval
from reports.expectations import ExpectationChange, Review
from reports.transitions import CellTransition
from reports.usage import Figure, UsageDelta
from warehouse.schema import AccessChannel, Verdict

UnknownPolicy = Literal["block", "pass"]
RegressionPolicy = Literal["any", "critical"]
"""Which newly regressed cells block: every one, or only those of critical scenarios (the
others are notes)."""
IntervalPolicy = Literal["block", "note"]
"""What a pass-rate difference interval wholly below zero does."""
Unit = Literal[" ms", " USD"]
"""Of an absolute increase and its noise floor, as printed after the number."""
EXIT_CODES: dict[Verdict, int] = {"admit": 0, "block": 1, "incomplete": 3}


@dataclass(frozen=True)
class Thresholds:
    """The gate's limits; None = not set (the verdict's notes say so)."""

    overall_pass_rate: float | None = None
    critical_pass_rate: float | None = None
    max_latency_regression_percent: float | None = None
    """Candidate p95 trial latency over the baseline's, in percent."""
    max_cost_usd: float | None = None
    """Total reported cost of the candidate's final trials."""
    max_cost_regression_percent: float | None = None
    """Candidate cost per trial over the baseline's, in percent."""
    max_pass_rate_drop: float | None = None
    """Block when the bootstrap interval's low end is below -this (a fraction, 0.05 = 5 pp)."""
    unknown_cost: UnknownPolicy = "block"
    unknown_latency: UnknownPolicy = "block"
    latency_floor_ms: float = 250.0
    """A p95 latency increase of at most this many ms is noise, whatever its percent."""
    cost_floor_usd: float = 0.001
    """An increase of the cost per trial of at most this many USD is noise."""
    min_paired_trials: int = 10
    """Fewest pairs measured on both runs for a latency or cost regression limit to apply."""
    regressions: RegressionPolicy = "any"
    """The default gate blocks on any new regression; ``critical`` limits that to critical
    scenarios (the regression-suite method's gate, with rate thresholds for the rest)."""
    interval_below_zero: IntervalPolicy = "block"
    """The default gate blocks when the whole interval is below zero (the candidate is worse,
    at the interval's confidence), whatever ``max_pass_rate_drop`` says."""


DEFAULT_GATE = "the default gate (any new regression or an interval wholly below zero blocks)"


NO_LATENCY_CHANNELS: frozenset[AccessChannel] = frozenset({"reference"})
"""Access channels whose models answer in process: their latency is the machine's load, never
the model's, so no latency regression is read from it."""


@dataclass(frozen=True)
class GateInput:
    candidate: pl.DataFrame
    """Every trial row of the candidate run (paired_trials.sql columns)."""
    critical: frozenset[str]
    transitions: Sequence[CellTransition]
    changes: Sequence[ExpectationChange]
    stale_reviews: Sequence[Review]
    deltas: Sequence[UsageDelta]
    interval: Interval | None
    dropped: Sequence[str] = ()
    """Scenario ids the baseline ran and the candidate did not."""
    added: Sequence[str] = ()
    """Scenario ids only the candidate ran (nothing to compare them with)."""
    baseline: pl.DataFrame | None = None
    """Every trial row of the baseline run: its incomplete trials make the verdict incomplete."""
    baseline_run: str = "baseline"
    candidate_run: str = "candidate"


@dataclass(frozen=True)
class GateResult:
    verdict: Verdict
    reasons: list[str]
    notes: list[str] = field(default_factory=list)
    waiting_for: dict[str, int] = field(default_factory=dict)
    """Run id -> its incomplete trials, for the baseline and the candidate (verdict
    ``incomplete`` when any): the runs to resume before a decision can be made."""
    thresholds: Thresholds = field(default_factory=lambda: Thresholds())
    """The limits that produced the verdict."""
    source: str = DEFAULT_GATE
    """Where the limits came from (the default gate, a gate file, a run's recorded config)."""

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]


def _rate(trials: pl.DataFrame) -> tuple[int, int]:
    final = trials.filter(pl.col("status") != "incomplete")
    return int(final["passed"].fill_null(False).sum()), final.height


def integrity_reasons(candidate: pl.DataFrame) -> list[str]:
    """Incomplete trials, state violations, contract violations: these block regardless."""
    reasons = []
    incomplete = candidate.filter(pl.col("status") == "incomplete")
    if incomplete.height:
        reasons.append(f"incomplete run: {incomplete.height} trial(s) have no final outcome "
                       "(infrastructure); resume the run")
    state = candidate.filter(pl.col("score_state") == 0)
    if state.height:
        reasons.append(f"state violation in {state.height} trial(s): "
                       + _scenarios(state))
    contract = candidate.filter(pl.col("vetoed").fill_null(False)
                                | (pl.col("status") == "agent_error"))
    if contract.height:
        reasons.append(f"contract violation (forbidden call or broken reply) in "
                       f"{contract.height} trial(s): " + _scenarios(contract))
    return reasons


def _scenarios(trials: pl.DataFrame) -> str:
    return ", ".join(sorted(set(trials["scenario_id"].to_list())))


MINOR_CELLS_LISTED = 5
"""Up to this many non-critical regressed cells are listed one by one; more are counted per
scenario (a model swap can regress hundreds of cells: one line each helps nobody)."""


MINOR_NOTE_HEAD = "regressions in non-critical scenarios (not blocking): "
REGRESSION_REASON_HEAD = "new regression in "


def minor_regressions_note(minor: Sequence[CellTransition], head: str = MINOR_NOTE_HEAD) -> str:
    """Regressions in non-critical scenarios, after ``head`` (a note, or under ``regressions:
    any`` a reason): the cells themselves when they are few, else how many cells regressed per
    scenario."""
    if len(minor) <= MINOR_CELLS_LISTED:
        return head + "; ".join(f"{t.cell} {t.label}" for t in minor)
    per_scenario: dict[str, int] = {}
    for t in minor:
        per_scenario[t.scenario_id] = per_scenario.get(t.scenario_id, 0) + 1
    counts = ", ".join(f"{scenario} ({n})" for scenario, n in sorted(per_scenario.items()))
    return (f"{head}{len(minor)} cells in {len(per_scenario)} scenarios: {counts}; "
            "`agentsweep compare --format json` lists every cell")


def regression_reasons(gate: GateInput, limits: Thresholds, notes: list[str]) -> list[str]:
    critical = [t for t in gate.transitions if t.critical and t.regressed]
    reasons = [f"new critical regression: {t.cell} {t.label} ({t.transition})"
               for t in critical]
    reasons += [f"critical scenario {s} is not in the candidate run" for s in gate.dropped
                if s in gate.critical]
    minor = [t for t in gate.transitions if t.regressed and not t.critical]
    if minor and limits.regressions == "any":
        reasons.append(minor_regressions_note(minor, REGRESSION_REASON_HEAD))
    elif minor:
        notes.append(minor_regressions_note(minor))
    others = [s for s in gate.dropped if s not in gate.critical]
    if others:
        notes.append(f"not in the candidate run: {', '.join(others)}")
    if gate.added:
        notes.append(f"only in the candidate run (not compared): {', '.join(gate.added)}")
    return reasons


def rate_reasons(gate: GateInput, limits: Thresholds, notes: list[str]) -> list[str]:
    reasons = []
    checks = (("overall", limits.overall_pass_rate, gate.candidate),
              ("critical", limits.critical_pass_rate,
               gate.candidate.filter(pl.col("scenario_id").is_in(sorted(gate.critical)))))
    for name, limit, trials in checks:
        k, n = _rate(trials)
        if limit is None:
            notes.append(f"no {name} pass-rate threshold set")
        elif n == 0:
            if name == "overall" or gate.critical:
                reasons.append(f"{name} pass rate unknown: no final trial")
        elif k < limit * n:
            reasons.append(f"{name} pass rate {k}/{n} = {k / n:.3f} is below {limit:g}")
    return reasons


def _delta(gate: GateInput, figure: Figure) -> UsageDelta:
    return next(d for d in gate.deltas if d.figure == figure)


def _limited(name: str, value: float | None, limit: float | None, policy: UnknownPolicy,
             unit: str, notes: list[str]) -> list[str]:
    if limit is None:
        notes.append(f"no {name} limit set")
        return []
    if value is None:
        if policy == "pass":
            notes.append(f"{name} unknown: passed explicitly (unknown_{name.split()[0]}: pass)")
            return []
        return [f"{name} unknown (not reported), limit {limit:g}{unit}"]
    if value > limit:
        return [f"{name} {value:.4g}{unit} exceeds the limit {limit:g}{unit}"]
    return []


@dataclass(frozen=True)
class Regression:
    """A usage figure's increase from the baseline to the candidate, and the limit on it."""

    name: str
    delta: UsageDelta
    limit: float | None
    policy: UnknownPolicy
    floor: float
    """The absolute increase that is still noise."""
    unit: Unit


def _percent(delta: UsageDelta) -> float | None:
    """The increase in percent; infinite from a baseline of 0; None when a side is unknown."""
    if delta.baseline is None or delta.candidate is None:
        return None
    if delta.baseline == 0:
        return 0.0 if delta.candidate == 0 else float("inf")
    return 100.0 * (delta.candidate - delta.baseline) / delta.baseline


def _no_evidence(regression: Regression, limits: Thresholds, offline: Sequence[str]) -> str | None:
    """Why the figure's increase is not evidence enough to apply its limit, or None."""
    delta = regression.delta
    if offline:
        return (f"{', '.join(offline)} answered in process (no latency of their own)")
    if delta.pairs < limits.min_paired_trials:
        return (f"measured on {delta.pairs} paired trial(s) of both runs, fewer than "
                f"min_paired_trials {limits.min_paired_trials}")
    increase = (delta.candidate or 0.0) - (delta.baseline or 0.0)
    if increase <= regression.floor:
        return (f"the increase {increase:+.4g}{regression.unit} is within the noise floor "
                f"{regression.floor:g}{regression.unit}")
    return None


def _regressed(regression: Regression, limits: Thresholds, notes: list[str],
               offline: Sequence[str] = ()) -> list[str]:
    """The reason a regression limit gives, if the evidence supports one; else a note."""
    percent = _percent(regression.delta)
    if regression.limit is None or percent is None:
        return _limited(regression.name, percent, regression.limit, regression.policy, "%",
                        notes)
    if percent <= regression.limit:
        return []
    why = _no_evidence(regression, limits, offline)
    if why is not None:
        notes.append(f"not enough evidence for a {regression.name} of {percent:.4g}% (limit "
                     f"{regression.limit:g}%): {why}; not a reason to block")
        return []
    increase = (regression.delta.candidate or 0.0) - (regression.delta.baseline or 0.0)
    return [f"{regression.name} {percent:.4g}% exceeds the limit {regression.limit:g}% "
            f"({increase:+.4g}{regression.unit} over {regression.delta.pairs} paired trials; "
            f"noise floor {regression.floor:g}{regression.unit})"]


def offline_models(gate: GateInput) -> list[str]:
    """The models of either run that answered in process (NO_LATENCY_CHANNELS)."""
    found: set[str] = set()
    for trials in (gate.baseline, gate.candidate):
        if trials is not None and "access_channel" in trials.columns:
            offline = trials.filter(pl.col("access_channel").is_in(sorted(NO_LATENCY_CHANNELS)))
            found.update(str(m) for m in offline["model"].to_list())
    return sorted(found)


def usage_reasons(gate: GateInput, limits: Thresholds, notes: list[str]) -> list[str]:
    latency = Regression("latency regression (p95)", _delta(gate, "latency_ms_p95"),
                         limits.max_latency_regression_percent, limits.unknown_latency,
                         limits.latency_floor_ms, " ms")
    cost = Regression("cost regression per trial", _delta(gate, "cost_usd_per_trial"),
                      limits.max_cost_regression_percent, limits.unknown_cost,
                      limits.cost_floor_usd, " USD")
    final = gate.candidate.filter(pl.col("status") != "incomplete")["cost_usd"]
    total = None if final.is_empty() or final.null_count() else float(final.sum())
    return [
        *_regressed(latency, limits, notes, offline_models(gate)),
        *_limited("cost total", total, limits.max_cost_usd, limits.unknown_cost, " USD",
                  notes),
        *_regressed(cost, limits, notes),
    ]


def review_reasons(gate: GateInput, notes: list[str]) -> list[str]:
    for review in gate.stale_reviews:
        notes.append(f"review of {review.scenario_id} ({review.old_sha256[:12]} -> "
                     f"{review.new_sha256[:12]}) matches no change of these runs: ignored")
    return [f"expectation change not reviewed: {c.scenario_id} {c.old_sha256[:12]} -> "
            f"{c.new_sha256[:12]} (changed together with the candidate: needs review)"
            for c in gate.changes if not c.reviewed]


def interval_reasons(gate: GateInput, limits: Thresholds, notes: list[str]) -> list[str]:
    interval = gate.interval
    if interval is None:
        return []
    reasons = []
    if interval.high < 0:
        wholly = (f"pass-rate difference interval [{interval.low:+.3f}, {interval.high:+.3f}] "
                  f"is wholly below zero ({interval.confidence:.0%} paired bootstrap)")
        if limits.interval_below_zero == "block":
            reasons.append(wholly)
        else:
            notes.append(f"{wholly}: not a reason to block (interval_below_zero: note)")
    if limits.max_pass_rate_drop is not None and interval.low < -limits.max_pass_rate_drop:
        reasons.append(f"pass-rate difference interval low end {interval.low:+.3f} is below "
                       f"-{limits.max_pass_rate_drop:g}")
    return reasons


def decide_gate(gate: GateInput, limits: Thresholds, source: str = DEFAULT_GATE) -> GateResult:
    """The verdict with every reason that applies."""
    notes: list[str] = []
    integrity = integrity_reasons(gate.candidate)
    reasons = [*integrity, *regression_reasons(gate, limits, notes),
               *rate_reasons(gate, limits, notes), *usage_reasons(gate, limits, notes),
               *review_reasons(gate, notes),
               *interval_reasons(gate, limits, notes)]
    waiting_for = {run: count for run, trials in ((gate.baseline_run, gate.baseline),
                                                  (gate.candidate_run, gate.candidate))
                   if trials is not None
                   and (count := trials.filter(pl.col("status") == "incomplete").height)}
    if gate.baseline is not None and waiting_for.get(gate.baseline_run):
        reasons.insert(0, f"incomplete baseline: {waiting_for[gate.baseline_run]} trial(s) of "
                          f"{gate.baseline_run} have no final outcome (infrastructure); resume it")
    verdict: Verdict = "incomplete" if waiting_for else "block" if reasons else "admit"
    return GateResult(verdict, reasons, notes, waiting_for, limits, source)
