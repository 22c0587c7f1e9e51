"""Reports over the warehouse: what a person or a CI gate reads after a sweep.

A room of its own, downstream of ``warehouse/`` and beside ``pipeline/``: it reads the warehouse
(named ``.sql`` files, results as polars DataFrames) and writes report files, and imports nothing
of ``pipeline/`` or ``flows/`` (a test holds it to that). ``flows/nightly.py`` calls it.
"""

from reports.compare import (
    NIGHTLY_PREFIX,
    Comparison,
    compare_runs,
    previous_nightly_run,
    report_path,
    write_comparison,
    write_csv,
)

__all__ = [
    "NIGHTLY_PREFIX",
    "Comparison",
    "compare_runs",
    "previous_nightly_run",
    "report_path",
    "write_comparison",
    "write_csv",
]
