"""``agentsweep report html``: one self-contained HTML report of a run, or of a comparison
(the run as candidate against ``--baseline``, decided as ``agentsweep gate`` decides), written
atomically. Bad input (an unknown run, a baseline sharing no scenario, an output folder that
does not exist, a bad gate config) is one line and exit 2, with no file written."""

from __future__ import annotations

from rich.console import Console

from pipeline.catalog import CatalogError
from pipeline.decide.html import HtmlOptions, write_html
from pipeline.errors import ExitCode
from reports import ComparisonInputError
from reports.html import ReportInputError
from warehouse.location import Root
from warehouse.writer import WarehouseError


def html_main(root: Root, options: HtmlOptions, console: Console, err: Console) -> int:
    try:
        path = write_html(root, options)
    except (ReportInputError, ComparisonInputError, CatalogError, WarehouseError) as exc:
        err.print(f"error: {exc}", markup=False, highlight=False, soft_wrap=True)
        return ExitCode.BAD_INPUT
    size = path.stat().st_size
    console.print(f"wrote {path} ({size / 1e6:.1f} MB): open it in any browser, offline",
                  markup=False)
    return 0


