"""Options several commands share (``compare``, ``gate``, ``report html``): the decision's
inputs and the paired bootstrap's settings."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

DecisionCatalogs = Annotated[list[Path] | None, typer.Option(
    "--catalog", help="A catalog root holding the runs' suites (for their critical marks); "
    "repeatable.")]
ReviewFile = Annotated[Path | None, typer.Option(
    "--review", help="Review file acknowledging expectation changes.")]
BootstrapSeed = Annotated[int, typer.Option(help="Bootstrap seed.")]
BootstrapResamples = Annotated[int, typer.Option(min=1, help="Bootstrap resamples.")]
BootstrapConfidence = Annotated[float, typer.Option(
    min=0.5, max=0.999, help="Two-sided confidence of the interval.")]
