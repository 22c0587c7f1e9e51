"""Reports over the warehouse: what a person or a CI gate reads after a sweep.

A room of its own, downstream of ``warehouse/`` and beside ``pipeline/``: it reads the warehouse
(named ``.sql`` files, results as polars DataFrames) and writes report files (and, through the
warehouse writer, the ``comparisons`` decision records), and imports nothing
of ``pipeline/`` or ``flows/`` (a test holds it to that). ``flows/nightly.py`` calls it.
"""

from reports.bootstrap import Interval, paired_bootstrap
from reports.compare import (
    NIGHTLY_PREFIX,
    Comparison,
    compare_runs,
    previous_nightly_run,
    report_path,
    write_comparison,
    write_csv,
)
from reports.decision import (
    BootstrapOptions,
    Decision,
    decide,
    decision_json,
    recorded_thresholds,
    store_decision,
)
from reports.expectations import ExpectationChange, Review
from reports.gate import GateResult, Thresholds
from reports.junit import decision_junit, run_junit, write_junit
from reports.paired import ComparisonInputError, PairedRuns, pair_runs
from reports.transitions import CellTransition, classify, pass_hat_k

__all__ = [
    "BootstrapOptions",
    "CellTransition",
    "ComparisonInputError",
    "Decision",
    "ExpectationChange",
    "GateResult",
    "Interval",
    "PairedRuns",
    "Review",
    "Thresholds",
    "classify",
    "decide",
    "decision_json",
    "decision_junit",
    "pair_runs",
    "paired_bootstrap",
    "pass_hat_k",
    "recorded_thresholds",
    "run_junit",
    "store_decision",
    "write_junit",
    "NIGHTLY_PREFIX",
    "Comparison",
    "compare_runs",
    "previous_nightly_run",
    "report_path",
    "write_comparison",
    "write_csv",
]
