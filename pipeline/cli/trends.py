"""``agentsweep report regressions --since 30d``: the cells that broke in the window, with
what recorded input changed between the last passing run and the first failing one, then the
flaky cells with their counts (reports.trends)."""

from __future__ import annotations

from datetime import datetime

from rich.console import Console

from pipeline.cli.tables import print_rows
from reports.trends import load_trends
from warehouse.location import Root

REGRESSION_COLUMNS = ["cell", "last passing run", "first failing run", "passed then",
                      "what changed"]
FLAKY_COLUMNS = ["cell", "runs", "passed", "pass rate"]


def print_trends(console: Console, root: Root, since: datetime, output_format: str,
                 limit: int | None = None) -> None:
    """The regressed, then the flaky cells; as tables, each shows its first ``limit`` rows and
    says how many more there are (csv and json give all)."""
    trends = load_trends(root, since)
    window = f"since {since:%Y-%m-%d %H:%M} UTC"
    regressions = [
        (r.cell.title, r.last_passing_run, r.first_failing_run,
         f"{r.failing_passed}/{r.failing_judged}",
         "; ".join(f"{c.input}: {c.before} -> {c.after}" for c in r.changes)
         or r.what_changed)
        for r in trends.regressions]
    flaky = [(f.cell.title, f.runs, f"{f.passed}/{f.judged}", f"{f.pass_rate:.2f}")
             for f in trends.flaky]
    if output_format != "table":
        print_rows(console, ["class", *REGRESSION_COLUMNS],
                   [("regressed", *r) for r in regressions]
                   + [("flaky", f[0], "", "", f[2], f"pass rate {f[3]} over {f[1]} runs")
                      for f in flaky], output_format)
        return
    if not regressions and not flaky:
        console.print(f"no regressed or flaky cell among the runs {window}", markup=False)
        return
    for columns, rows, what in ((REGRESSION_COLUMNS, regressions, "regressions"),
                                (FLAKY_COLUMNS, flaky, "flaky cells")):
        shown = rows if limit is None else rows[:limit]
        print_rows(console, columns, shown, output_format, title=f"{what} {window} ({len(rows)})")
        if len(shown) < len(rows):
            console.print(f"... {len(rows) - len(shown)} more {what} (--limit N, or --format csv "
                          "for all)", markup=False)
