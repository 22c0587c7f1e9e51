"""Mutation verification of the suites (the changing-intent method, "bench verification").

Golden and every mutant reference model the suites declare a catch for play every scenario in
every memory mode (a mutant no scenario of these suites names proves nothing about their
checks). The suite is verified when golden passes everything, each mutant fails exactly the
(scenario, mode) cells declared for it with the declared check as the first violation, and
passes everywhere else.
Runs in-process: it verifies the checks, not the infrastructure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pipeline.catalog import Suite
from pipeline.environment.sandbox import ToolsMode
from pipeline.scoring.check_ids import readable_check_id
from pipeline.sweep.grid import MEMORY_MODES, MemoryMode, ModelConfig, expand
from pipeline.trial.run import RunContext, run_trial

GOLDEN = "reference/golden"


@dataclass(frozen=True)
class Cell:
    scenario_id: str
    mode: str
    model: str
    expected: str | None
    """Declared catching check (prefix); None = must pass."""
    status: str
    passed: bool | None
    first_violation: str | None
    error: str | None
    also_failed: tuple[str, ...] = ()
    """The other checks that failed (counted ones): a mutant caught by an unrelated check too
    shows it here."""

    @property
    def ok(self) -> bool:
        if self.expected is None:
            return self.status == "complete" and self.passed is True
        # A mutant may be stopped by the two-phase memory update (agent_error invalid_memory).
        return (self.status in ("complete", "agent_error") and self.passed is False
                and (self.first_violation or "").startswith(self.expected))

    def label(self) -> str:
        if self.status == "incomplete" or (self.status != "complete" and not self.ok):
            return f"ERROR {self.status}: {self.error}"
        if self.expected is None:
            return "pass" if self.ok else f"UNEXPECTED FAIL {self.first_violation}"
        if self.ok:
            also = f" (+{len(self.also_failed)} other)" if self.also_failed else ""
            return f"caught {self.first_violation}{also}"
        if self.passed:
            return f"MISSED (expected {self.expected})"
        return f"WRONG CHECK {self.first_violation} (expected {self.expected})"


def verify(suites: Sequence[Suite], modes: Sequence[MemoryMode] = MEMORY_MODES,
           mutants: Sequence[str] | None = None, tools: ToolsMode = "sandbox") -> list[Cell]:
    declared = sorted({c.mutant for suite in suites for loaded in suite.scenarios
                       for c in loaded.scenario.catches})
    names = [GOLDEN, *(f"reference/{m}" for m in (mutants or declared))]
    models = [ModelConfig(n) for n in names]
    ctx = RunContext("verify-suite", "verify")
    cells = []
    for spec in expand(suites, models, ["default"], modes, repeats=1, tools=tools):
        expected = None
        for catch in spec.scenario.catches:
            if f"reference/{catch.mutant}" == spec.model.name and spec.memory_mode in catch.modes:
                expected = readable_check_id(catch.check)  # an id copied from an old run
        result = run_trial(spec, ctx)
        row = result.trial
        also = tuple(c.check_id for c in result.checks if c.counted and not c.passed
                     and c.check_id != row.first_violation_check)
        cells.append(Cell(spec.scenario.id, spec.memory_mode, spec.model.name, expected,
                          row.status, row.passed, row.first_violation_check,
                          row.error_message, also))
    return cells
