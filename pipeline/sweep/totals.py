"""How a run's trials ended, as the last line of every run says it: passed, failed, agent
errors, incomplete, and the exit code (pipeline.errors.ExitCode).

The counts come from the run's summary (warehouse/sql/summary.sql), so a resumed run counts
the trials of earlier invocations too: ``k`` passed, ``n`` ended with a final outcome (of which
``agent_errors`` were agent errors or limits), ``incomplete`` have none yet.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RunTotals:
    passed: int
    failed: int
    """Complete trials that did not pass (a check failed)."""
    agent_errors: int
    """Trials that ended in an agent error or a limit (they count against the agent)."""
    incomplete: int
    """Trials without a final outcome (infrastructure errors): resume the run."""

    @property
    def trials(self) -> int:
        return self.passed + self.failed + self.agent_errors + self.incomplete

    def counts(self) -> str:
        return (f"{self.passed} passed, {self.failed} failed, {self.agent_errors} agent errors, "
                f"{self.incomplete} incomplete (of {self.trials} trials)")

    def line(self, run_id: str, exit_code: int) -> str:
        return f"run {run_id}: {self.counts()}; exit {exit_code}"


def run_totals(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> RunTotals:
    """The totals of a run's summary rows (columns ``k``, ``n``, ``agent_errors``,
    ``incomplete``)."""
    def total(name: str) -> int:
        index = columns.index(name)
        return sum(int(row[index]) for row in rows)

    if not rows:
        return RunTotals(0, 0, 0, 0)
    passed, agent_errors = total("k"), total("agent_errors")
    return RunTotals(passed, total("n") - passed - agent_errors, agent_errors,
                     total("incomplete"))
