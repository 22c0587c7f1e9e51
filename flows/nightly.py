"""The nightly flow: run a sweep from a spec file, then compare it with a baseline run.

    python -m flows.nightly serve --spec infra/sweeps/nightly.yaml --baseline previous
    python -m flows.nightly run --spec infra/sweeps/nightly.yaml --baseline nightly-20260501-ab12cd
    python -m flows.nightly run --spec infra/sweeps/nightly.yaml --run-id nightly-manual-1

``serve`` registers the deployment ``agentsweep-nightly/nightly`` (cron ``0 2 * * *``, UTC) with
the Prefect API in ``PREFECT_API_URL`` and executes its runs until stopped; ``run`` runs the flow
once, now. The comparison (``reports.compare`` over ``warehouse/sql/compare_runs.sql``) lands in
``AGENTSWEEP_HOME/reports/<run_id>-vs-<baseline>.csv`` and, beside it, the HTML report of the
comparison (``<run_id>-vs-<baseline>.html``: gate verdict, transitions, matrix, traces; with no
baseline the run's own ``<run_id>.html``); ``previous`` names the latest earlier nightly run
(run ids ``nightly-...``, which this flow gives runs whose spec sets no run_id).

The sweep is prepared as ``agentsweep run`` prepares it (pipeline.sweep.prepare: every check
before the first trial, the run lock, the warm stack of ``agentsweep up`` when it runs); ``run``
refuses a mistake in one line (exit 2) before Prefect starts. Its last line is the verdict:
``PASS`` or ``REGRESSED`` with the count of regressed cells (exit 1), or ``INCOMPLETE`` (exit 3)
when trials of the run could not finish.
"""

from __future__ import annotations

import argparse
import secrets
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pipeline.runtime import hygiene

if __name__ == "__main__":
    hygiene.apply()  # as a program: before Prefect reads its settings (once, at import)

from prefect import flow, task  # noqa: E402
from prefect.cache_policies import NO_CACHE  # noqa: E402
from prefect.deployments.runner import RunnerDeployment  # noqa: E402

from flows.sweep import run_sweep  # noqa: E402
from pipeline.catalog import CatalogError  # noqa: E402
from pipeline.decide.html import nightly_report
from pipeline.errors import ExitCode  # noqa: E402
from pipeline.runtime.bounded_exit import exit_within  # noqa: E402
from pipeline.sweep.config import SweepConfig
from pipeline.sweep.preflight import BadInput  # noqa: E402
from pipeline.sweep.prepare import prepared_for  # noqa: E402
from pipeline.sweep.spec import load_spec  # noqa: E402
from pipeline.sweep.stages import SweepOutcome
from pipeline.sweep.totals import run_totals
from reports import NIGHTLY_PREFIX, Comparison, previous_nightly_run, write_comparison  # noqa: E402

CRON = "0 2 * * *"
DEPLOYMENT_NAME = "nightly"
PREVIOUS = "previous"
DEFAULT_SPEC = Path(__file__).resolve().parent.parent / "infra" / "sweeps" / "nightly.yaml"


class NightlyRegression(Exception):
    """The candidate run regressed against its baseline: the flow run fails with the cells."""

    def __init__(self, comparison: Comparison) -> None:
        cells = comparison.regressed_cells()
        super().__init__(f"run {comparison.candidate} regressed against {comparison.baseline} "
                         f"in {len(cells)} cell(s): {'; '.join(cells)} (report: "
                         f"{comparison.report}; HTML: {html_path(comparison)})")
        self.comparison = comparison


def html_path(comparison: Comparison) -> Path | None:
    """The HTML report beside the comparison's CSV."""
    return comparison.report.with_suffix(".html") if comparison.report else None


@dataclass(frozen=True)
class NightlyOutcome:
    run_id: str
    sweep: SweepOutcome
    comparison: Comparison | None
    """None when no baseline was named (or ``previous`` found none)."""
    html: Path | None = None
    """The HTML report (the comparison's, or the run's when there is none)."""


def nightly_run_id() -> str:
    return f"{NIGHTLY_PREFIX}{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def nightly_config(spec_path: str, run_id: str | None = None) -> SweepConfig:
    """The spec's sweep under ``run_id``, else the spec's own, else a new ``nightly-...`` id."""
    config = load_spec(Path(spec_path), hygiene.warehouse_root(),
                       {"run_id": run_id} if run_id else None)
    if "run_id" not in config.model_fields_set:
        config = config.model_copy(update={"run_id": nightly_run_id()})
    return config


@task(name="compare-runs", cache_policy=NO_CACHE)
def compare_task(config: SweepConfig, baseline_run_id: str) -> Comparison | None:
    baseline: str | None = baseline_run_id
    if baseline_run_id == PREVIOUS:
        baseline = previous_nightly_run(config.warehouse, config.run_id)
    if baseline is None:
        return None
    return write_comparison(config.warehouse, hygiene.agentsweep_home() / "reports", baseline,
                            config.run_id)


@task(name="html-report", cache_policy=NO_CACHE)
def html_task(config: SweepConfig, comparison: Comparison | None) -> Path:
    reports = hygiene.agentsweep_home() / "reports"
    path = (html_path(comparison) if comparison is not None else None) or (
        reports / f"{config.run_id}.html")
    return nightly_report(config.warehouse, path, config.run_id,
                          comparison.baseline if comparison is not None else None)


@flow(name="agentsweep-nightly", log_prints=False)
def nightly(spec_path: str, baseline_run_id: str | None = None,
            run_id: str | None = None) -> NightlyOutcome:
    """Sweep the spec; with a baseline run id (or ``previous``), write the k/n transitions.
    A regressed cell fails the flow run (NightlyRegression); a cell whose scenario or prompt
    changed is marked ``changed`` for review, never a regression."""
    prepared = prepared_for(nightly_config(spec_path, run_id))
    config = prepared.config
    outcome = run_sweep(prepared, "nightly")
    comparison = compare_task(config, baseline_run_id) if baseline_run_id else None
    html = html_task(config, comparison)  # before a regression fails the run: read it then
    if comparison is not None and comparison.changes().get("regressed"):
        raise NightlyRegression(comparison)
    return NightlyOutcome(config.run_id, outcome, comparison, html)


def deployment(spec_path: str | Path = DEFAULT_SPEC, baseline_run_id: str | None = PREVIOUS,
               cron: str = CRON, name: str = DEPLOYMENT_NAME) -> RunnerDeployment:
    """The scheduled deployment of ``nightly`` (the spec path is made absolute)."""
    made = nightly.to_deployment(
        name=name, cron=cron,
        parameters={"spec_path": str(Path(spec_path).resolve()),
                    "baseline_run_id": baseline_run_id},
        description="Nightly regression sweep and baseline comparison (agentsweep).",
        tags=["agentsweep", "nightly"])
    if not isinstance(made, RunnerDeployment):  # only from async code, which this is not
        raise TypeError("deployment() must be called from synchronous code")
    return made


def run_once(spec: str, baseline: str | None, run_id: str | None) -> int:
    """``run``: prepare (a mistake: one line, exit 2, before Prefect starts), run the flow, and
    end with the verdict; the exit code."""
    from pipeline.execution.runlock import RunLocked
    from pipeline.runtime.prefect_state import mark_good
    from pipeline.runtime.probe import prefect_lost_line

    try:
        config = nightly_config(spec, run_id)
        prepared = prepared_for(config, say=print)
    except (BadInput, CatalogError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    print(f"nightly run {config.run_id}: starting on {prepared.where}", flush=True)
    try:
        result = nightly.with_options(flow_run_name=f"nightly {config.run_id}")(
            spec, baseline, config.run_id)
    except NightlyRegression as exc:
        comparison = exc.comparison
        print(f"REGRESSED: run {comparison.candidate} against {comparison.baseline}: "
              f"{len(comparison.regressed_cells())} regressed cell(s): "
              f"{'; '.join(comparison.regressed_cells())}; report: {comparison.report}; "
              f"HTML: {html_path(comparison)}; exit {ExitCode.BLOCKED}", file=sys.stderr)
        return ExitCode.BLOCKED
    except RunLocked as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    except Exception as exc:
        lost = prefect_lost_line(exc, f"nightly {config.run_id}",
                                 f"agentsweep run --run-id {config.run_id} --resume")
        if lost is None:
            raise
        print(lost, file=sys.stderr)
        return ExitCode.INCOMPLETE
    mark_good(hygiene.prefect_home())
    return _verdict(result)


def _verdict(result: NightlyOutcome) -> int:
    """The last line: PASS / INCOMPLETE, what ran, what to read; the exit code."""
    comparison = result.comparison
    changed = comparison.changes().get("changed", 0) if comparison else 0
    against = f"against {comparison.baseline}" if comparison else "no baseline to compare with"
    incomplete = result.sweep.statuses.get("incomplete", 0)
    verdict = "INCOMPLETE" if incomplete or result.sweep.stopped else "PASS"
    code = ExitCode.INCOMPLETE if verdict == "INCOMPLETE" else ExitCode.OK
    totals = run_totals(result.sweep.summary_columns, result.sweep.summary_rows)
    print(f"run {result.run_id}: executed {result.sweep.executed}; comparison: "
          f"{comparison.report if comparison else 'none'}; HTML report: {result.html}")
    stopped = result.sweep.stopped
    print(f"{verdict}: nightly {result.run_id} {against}: 0 regressed cell(s)"
          + (f", {changed} changed (to review)" if changed else "")
          + (f"; stopped: {stopped.reason}. {stopped.remedy}, then resume with agentsweep "
             f"run --run-id {result.run_id} --resume" if stopped else "")
          + (f"; {incomplete} trial(s) incomplete: resume with agentsweep run --run-id "
             f"{result.run_id} --resume" if incomplete and not stopped else "")
          + f"; trials: {totals.counts()}; exit {code}")
    return code


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m flows.nightly", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["serve", "run"])
    parser.add_argument("--spec", default=str(DEFAULT_SPEC), help="sweep spec (YAML)")
    parser.add_argument("--baseline", default=PREVIOUS,
                        help="baseline run id, 'previous' (default) or 'none'")
    parser.add_argument("--run-id", help="the run's id (`run`; default: the spec's, else new)")
    parser.add_argument("--cron", default=CRON, help="schedule of `serve` (UTC)")
    parser.add_argument("--name", default=DEPLOYMENT_NAME, help="deployment name")
    args = parser.parse_args(argv)
    hygiene.apply()
    baseline = None if args.baseline.lower() == "none" else args.baseline
    if args.command == "run":
        code = run_once(args.spec, baseline, args.run_id)
        exit_within(code)  # its verdict is said: Prefect's exit work may not hold the process
        raise SystemExit(code)
    from prefect import serve

    serve(deployment(args.spec, baseline, args.cron, args.name))


if __name__ == "__main__":
    main()
