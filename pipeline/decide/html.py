"""The HTML report of a run or of a comparison (the decision computed here, ``reports.html``
writes the page)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipeline.decide.decision import DecideOptions, make_decision
from pipeline.util.redact import redactor
from reports import Decision
from reports.html import ReportInputError, ReportOptions, TraceOptions, write_report
from warehouse.location import Root
from warehouse.writer import RunId


@dataclass(frozen=True)
class HtmlOptions:
    run_id: RunId
    output: Path
    baseline: RunId | None = None
    config: Path | None = None
    review: Path | None = None
    catalogs: tuple[Path, ...] = ()
    traces: TraceOptions = TraceOptions()


def write_html(root: Root, options: HtmlOptions) -> Path:
    """The report file; ReportInputError / ComparisonInputError / CatalogError /
    WarehouseError for bad input (nothing written)."""
    if not options.output.parent.is_dir():
        raise ReportInputError(f"-o {options.output}: the folder {options.output.parent} does "
                               "not exist")
    decision = None
    if options.baseline is not None:
        decision = make_decision(root, DecideOptions(
            options.baseline, options.run_id, options.config, options.review,
            catalogs=options.catalogs))
    return write_report(root, options.output, options.run_id,
                        ReportOptions(scrub=redactor(), traces=options.traces, decision=decision))


def decision_report(root: Root, path: Path, run_id: str, decision: Decision | None) -> Path:
    """A flow's report: the comparison of ``decision`` as it was decided (the same verdict as
    the flow's), else the run's own report. The folder is made if missing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_report(root, path, run_id, ReportOptions(scrub=redactor(), decision=decision))
