"""Compare and gate over stored runs: the decision record of a candidate against its baseline
(``reports`` does the statistics; ``agentsweep compare``/``gate`` and the model-swap flow call
this)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pipeline.catalog import known_suites, load_suite, set_extra_roots
from pipeline.decide.files import (
    GateConfig,
    load_gate_config,
    load_reviews,
    recorded_gate_config,
    thresholds,
)
from reports import (
    BootstrapOptions,
    Decision,
    decide,
    recorded_thresholds,
)
from reports.bootstrap import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED
from reports.gate import DEFAULT_GATE
from warehouse.location import Root
from warehouse.query import run_named
from warehouse.writer import RunId

OutputFormat = Literal["table", "json"]


@dataclass(frozen=True)
class DecideOptions:
    baseline: RunId
    candidate: RunId
    config: Path | None = None
    review: Path | None = None
    junit: Path | None = None
    seed: int = DEFAULT_SEED
    resamples: int = DEFAULT_RESAMPLES
    confidence: float = DEFAULT_CONFIDENCE
    output_format: OutputFormat = "table"
    fail_on_new_regression: bool = False
    catalogs: tuple[Path, ...] = ()
    """Catalog roots searched (before the bundled one) for the runs' suites."""


def critical_scenarios(root: Root, baseline: str, candidate: str
                       ) -> tuple[frozenset[str], list[str]]:
    """Scenario ids marked ``"critical": true`` in the suites the two runs ran (looked up in the
    catalogs by suite id), and a note for each suite no catalog root holds (its marks unknown:
    name its root with --catalog, or the scenarios with ``critical:`` in the gate config)."""
    suites = [str(r[0]) for r in run_named(root, "run_suites",
                                           {"baseline": baseline, "candidate": candidate}).rows]
    known = known_suites()
    found: set[str] = set()
    notes = []
    for suite_id in suites:
        if suite_id not in known:
            notes.append(f"suite {suite_id} is in no catalog root: its critical marks are "
                         "unknown (--catalog DIR, or critical: [...] in the gate config)")
            continue
        found |= {s.scenario.id for s in load_suite(known[suite_id]).scenarios
                  if s.scenario.critical}
    return frozenset(found), notes


def make_decision(root: Root, options: DecideOptions) -> Decision:
    """The decision; CatalogError / ComparisonInputError for bad input. The run ids were
    checked where they entered (an option, a flow's parameter, a SweepConfig)."""
    set_extra_roots(list(options.catalogs))
    file = load_gate_config(options.config) if options.config else None
    reviews = load_reviews(options.review) if options.review else []
    recorded = recorded_gate_config(recorded_thresholds(root, options.candidate),
                                    options.candidate)
    critical, notes = critical_scenarios(root, options.baseline, options.candidate)
    named = frozenset(file.critical if file else [])
    return decide(root, options.baseline, options.candidate, critical=critical | named,
                  reviews=reviews, thresholds=thresholds(recorded, file),
                  options=BootstrapOptions(options.seed, options.resamples, options.confidence),
                  notes=notes, source=thresholds_source(options, recorded))


def thresholds_source(options: DecideOptions, recorded: GateConfig) -> str:
    """Where the gate's limits come from, as the verdict names it."""
    found = []
    if options.config is not None:
        found.append(f"gate config {options.config}")
    if recorded.model_dump(exclude_none=True, exclude={"critical"}):
        found.append(f"thresholds recorded by run {options.candidate}")
    if not found:
        return DEFAULT_GATE
    return " and ".join(found) + " (the keys they leave unset: the default gate's)"
