"""Database domains (the three-errors method): expected state, faults and diagnostics of a scenario
whose
write tools change a real per-trial SQLite database instead of being intercepted.

The expected state is the initial state plus the one allowed change: ``changes`` say which rows
(by key) get which column values; every other row of every table must stay as it was. The count
of effects (successful state changes the tools made) is checked with it. A fault makes a tool
commit and then answer as if it had failed (``timeout_after_commit``). Diagnostics are chosen in
advance and stored per trial; those the scenario ``requires`` are checks.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

SandboxStyle = Literal["intercept", "database"]
"""How a domain's write tools run: intercepted (recorded, answered, nothing changes) or
against a per-trial copy of the domain's database (``db.sql``)."""
FaultKind = Literal["timeout_after_commit"]
DiagnosticName = Literal["read_before_write", "read_after_fault", "read_before_answer"]
DIAGNOSTICS: tuple[DiagnosticName, ...] = get_args(DiagnosticName)
TIMEOUT_MESSAGE = ("timeout: the server did not answer in time; the outcome of the operation "
                   "is unknown")
"""What a tool with a ``timeout_after_commit`` fault answers, after it committed."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class RowChange(_Strict):
    """The allowed change of one row: the row of ``table`` whose columns equal ``key`` gets
    the values of ``set``."""

    table: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    key: dict[str, Any] = Field(min_length=1, description="Columns that identify the row.")
    set: dict[str, Any] = Field(min_length=1, description="Its new column values.")


class DatabaseExpectation(_Strict):
    changes: list[RowChange] = Field(default_factory=list, description=(
        "The allowed changes; none: every table stays exactly as it was."))
    effects: int | None = Field(default=None, ge=0, description=(
        "Successful state changes the write tools make (an idempotent repeat makes none); "
        "null: not counted."))
    golden: bool = Field(default=False, description=(
        "The expected database is the seed with the scenario's golden calls replayed on a "
        "fresh copy (a call the tools refuse changes nothing): tau2's DB check. Then "
        "``changes`` must be empty."))
    write_calls: dict[str, int] = Field(default_factory=dict, description=(
        "Exact number of calls of each named write tool (attempts included)."))

    @model_validator(mode="after")
    def _golden_or_changes(self) -> DatabaseExpectation:
        if self.golden and self.changes:
            raise ValueError("a golden expectation replays the golden calls: no changes")
        return self


class Fault(_Strict):
    """The ``call``-th call of ``tool`` (1-based) commits, then answers as ``kind`` says."""

    tool: str = Field(min_length=1)
    call: int = Field(default=1, ge=1)
    kind: FaultKind = "timeout_after_commit"


SnapshotScope = Literal["whole", "changed"]
"""What the snapshots store: every row of every table, or (a large database) only the rows
that differ between the phases - the comparison of two phases is the same either way."""


class DatabaseRules(_Strict):
    """What a database scenario declares beyond its turns (scoring and the sandbox read it)."""

    setup: list[RowChange] = Field(default_factory=list, description=(
        "Changes to the seed database this scenario starts from (an order already shipped)."))
    expected: DatabaseExpectation
    faults: list[Fault] = Field(default_factory=list)
    diagnostics: list[DiagnosticName] = Field(default_factory=lambda: list(DIAGNOSTICS),
                                              description="Recorded per trial.")
    requires: list[DiagnosticName] = Field(default_factory=list, description=(
        "Diagnostics that must hold: each a check (diagnostic:<name>)."))
    snapshots: SnapshotScope = "whole"
