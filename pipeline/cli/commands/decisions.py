"""Release decisions over stored runs: ``compare`` and ``gate``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from pipeline.cli import terminal
from pipeline.cli.options import (
    BootstrapConfidence,
    BootstrapResamples,
    BootstrapSeed,
    DecisionCatalogs,
    ReviewFile,
)
from pipeline.cli.outputs import Force, checked_output
from pipeline.cli.run_ids import checked_run_id, known_runs
from pipeline.cli.terminal import fail
from pipeline.runtime import hygiene

app = typer.Typer()


@app.command()
def compare(
    baseline: Annotated[str, typer.Argument(help="The baseline run id.")],
    candidate: Annotated[str, typer.Argument(help="The candidate run id.")],
    output_format: Annotated[str, typer.Option("--format", help="table or json")] = "table",
    fail_on_new_regression: Annotated[bool, typer.Option(
        "--fail-on-new-regression", help="Exit 1 when a cell regressed (new_failure or "
        "stability_regression).")] = False,
    junit: Annotated[Path | None, typer.Option("--junit", help="Write JUnit XML here.")] = None,
    config: Annotated[Path | None, typer.Option(
        "--config", help="Gate config (YAML) for the verdict shown.")] = None,
    review: ReviewFile = None,
    catalog: DecisionCatalogs = None,
    seed: BootstrapSeed = 7,
    resamples: BootstrapResamples = 5000,
    confidence: BootstrapConfidence = 0.9,
    force: Force = False,
    all_cells: Annotated[bool, typer.Option(
        "--all", help="List the unchanged cells too (by default the other cells are listed "
        "and these counted).")] = False,
) -> None:
    """Baseline vs candidate: transitions per cell, pass^k, usage deltas, expectation changes,
    the paired bootstrap interval and the gate's verdict (stored in the comparisons table)."""
    from pipeline.cli.decide import compare_main
    from pipeline.decide.decision import DecideOptions

    fmt = _decide_format(output_format)
    known_runs(("baseline", baseline), ("candidate", candidate))
    checked_output(junit, "--junit", force)
    options = DecideOptions(checked_run_id("baseline", baseline),
                            checked_run_id("candidate", candidate), config, review, junit, seed,
                            resamples, confidence, fmt, fail_on_new_regression,
                            tuple(catalog or []))
    code = compare_main(
        hygiene.warehouse_root(), options, terminal.console, terminal.err_console, all_cells)
    if code:
        raise typer.Exit(code)


@app.command()
def gate(
    candidate: Annotated[str, typer.Argument(help="The candidate run id.")],
    baseline: Annotated[str, typer.Option("--baseline", help="The baseline run id.")],
    config: Annotated[Path | None, typer.Option(
        "--config", help="Gate config (YAML): thresholds; the candidate run's recorded "
        "thresholds apply where it sets none.")] = None,
    review: ReviewFile = None,
    junit: Annotated[Path | None, typer.Option("--junit", help="Write JUnit XML here.")] = None,
    output_format: Annotated[str, typer.Option("--format", help="table or json")] = "table",
    catalog: DecisionCatalogs = None,
    seed: BootstrapSeed = 7,
    resamples: BootstrapResamples = 5000,
    confidence: BootstrapConfidence = 0.9,
    force: Force = False,
) -> None:
    """The admission rule: exit 0 admit, 1 block, 2 bad input, 3 incomplete; every reason
    that applies is listed."""
    from pipeline.cli.decide import gate_main
    from pipeline.decide.decision import DecideOptions

    fmt = _decide_format(output_format)
    known_runs(("candidate", candidate), ("--baseline", baseline))
    checked_output(junit, "--junit", force)
    options = DecideOptions(checked_run_id("--baseline", baseline),
                            checked_run_id("candidate", candidate), config, review, junit, seed,
                            resamples, confidence, fmt, catalogs=tuple(catalog or []))
    code = gate_main(hygiene.warehouse_root(), options, terminal.console, terminal.err_console)
    if code:
        raise typer.Exit(code)


def _decide_format(output_format: str) -> Literal["table", "json"]:
    if output_format == "json":
        return "json"
    if output_format != "table":
        fail(f"--format: expected table or json, got {output_format!r}")
    return "table"
