"""The HTML report: one self-contained file per run or comparison (``agentsweep report html``).

Modules, one concept each: ``data`` (the run's aggregates, DuckDB SQL in
``warehouse/sql/html_*.sql``), ``traces`` (the viewer's trial index and the embedded traces),
``colour`` and ``charts`` (cividis / viridis scales, inline SVG), ``markup`` (escaping and
redaction, JSON safe inside a script block), ``sections_run`` / ``sections_conditions`` /
``sections_compare`` (the sections), ``page`` (the file: CSP, inlined assets, atomic write).
Imports nothing of ``pipeline/``: the caller passes the redaction (``ReportOptions.scrub``).
"""

from reports.html.data import ReportInputError
from reports.html.page import ReportOptions, render, write_report
from reports.html.traces import TraceOptions

__all__ = ["ReportInputError", "ReportOptions", "TraceOptions", "render", "write_report"]
