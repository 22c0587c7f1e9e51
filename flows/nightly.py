"""The nightly flow: run a sweep from a spec file, then compare it with a baseline run.

    python -m flows.nightly serve --spec infra/sweeps/nightly.yaml --baseline previous
    python -m flows.nightly run --spec infra/sweeps/nightly.yaml --baseline nightly-20260501-ab12cd
    python -m flows.nightly run --spec infra/sweeps/nightly.yaml --run-id nightly-manual-1

``serve`` registers the deployment ``agentsweep-nightly/nightly`` (cron ``0 2 * * *``, UTC) with
the Prefect API in ``PREFECT_API_URL`` and executes its runs until stopped; ``run`` runs the flow
once, now. The comparison (``reports.compare`` over ``warehouse/sql/compare_runs.sql``) lands in
``AGENTSWEEP_HOME/reports/<run_id>-vs-<baseline>.csv`` and, beside it, the HTML report of the
decision (``<run_id>-vs-<baseline>.html``: verdict, transitions, matrix, traces; with no
baseline the run's own ``<run_id>.html``); ``previous`` names the latest earlier nightly run
(run ids ``nightly-...``, which this flow gives runs whose spec sets no run_id).

The run is then decided against its baseline as ``agentsweep gate`` decides (``--gate`` and
``--review`` as there; without ``--gate`` the default gate: any new regression blocks), and that
one decision is everywhere: the record in the ``comparisons`` table (the viewer), beside the CSV
the decision JSON, JUnit XML and HTML report, the last printed line (``ADMIT``/``BLOCK``/
``INCOMPLETE``, the gate's exit code 0/1/3), and the flow run's state in Prefect (Completed;
Failed with the verdict and its reasons; Cancelled when interrupted). With no baseline the last
line is ``PASS``, or ``INCOMPLETE`` (exit 3) when trials of the run could not finish.

The sweep is prepared as ``agentsweep run`` prepares it (pipeline.sweep.prepare: every check
before the first trial, the run lock, the warm stack of ``agentsweep up`` when it runs); ``run``
refuses a mistake in one line (exit 2) before Prefect starts. A deployment's runs are named
after their run ids and print their verdict into the serve log.
"""

from __future__ import annotations

import argparse
import secrets
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from pipeline.runtime import hygiene

if __name__ == "__main__":
    hygiene.apply()  # as a program: before Prefect reads its settings (once, at import)

from prefect import flow, task  # noqa: E402
from prefect.cache_policies import NO_CACHE  # noqa: E402
from prefect.client.schemas.objects import State  # noqa: E402
from prefect.deployments.runner import RunnerDeployment  # noqa: E402

from flows.programs import quiet_flow_logs, serve_deployment  # noqa: E402
from flows.sweep import run_sweep, tags_of  # noqa: E402
from pipeline.catalog import CatalogError  # noqa: E402
from pipeline.decide.decision import DecideOptions, make_decision  # noqa: E402
from pipeline.decide.files import check_decision_files  # noqa: E402
from pipeline.decide.html import decision_report  # noqa: E402
from pipeline.decide.published import PublishedDecision, publish  # noqa: E402
from pipeline.errors import ExitCode  # noqa: E402
from pipeline.runtime.bounded_exit import exit_within  # noqa: E402
from pipeline.runtime.flow_runs import (  # noqa: E402
    interrupted_state,
    name_this_flow_run,
    outcome_of,
    verdict_state,
)
from pipeline.sweep.config import SweepConfig  # noqa: E402
from pipeline.sweep.handoff import Handed  # noqa: E402
from pipeline.sweep.preflight import BadInput  # noqa: E402
from pipeline.sweep.prepare import PreparedSweep, prepare, prepared_for  # noqa: E402
from pipeline.sweep.spec import load_spec  # noqa: E402
from pipeline.sweep.stages import SweepOutcome  # noqa: E402
from pipeline.sweep.totals import run_totals  # noqa: E402
from reports import (  # noqa: E402
    NIGHTLY_PREFIX,
    Comparison,
    ComparisonInputError,
    Decision,
    previous_nightly_run,
    write_comparison,
)
from reports.decision import verdict_line  # noqa: E402
from warehouse.writer import RunId, WarehouseError, validate_run_id  # noqa: E402

CRON = "0 2 * * *"
DEPLOYMENT_NAME = "nightly"
PREVIOUS = "previous"
DEFAULT_SPEC = Path(__file__).resolve().parent.parent / "infra" / "sweeps" / "nightly.yaml"


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
    """The HTML report (the decision's, or the run's when there is none)."""
    published: PublishedDecision | None = None
    """The decision against the baseline (gate semantics), with its record, JUnit and HTML."""

    @property
    def decision(self) -> Decision | None:
        return self.published.decision if self.published is not None else None


def nightly_run_id() -> str:
    return f"{NIGHTLY_PREFIX}{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def nightly_config(spec_path: str, run_id: str | None = None) -> SweepConfig:
    """The spec's sweep under ``run_id``, else the spec's own, else a new ``nightly-...`` id."""
    config = load_spec(Path(spec_path), hygiene.warehouse_root(),
                       {"run_id": run_id} if run_id else None)
    if "run_id" not in config.model_fields_set:
        config = config.model_copy(update={"run_id": nightly_run_id()})
    return config


def check_baseline(baseline_run_id: str | None) -> None:
    """A named baseline is a usable run id (checked before the sweep, not after it)."""
    if baseline_run_id is not None and baseline_run_id != PREVIOUS:
        try:
            validate_run_id(baseline_run_id)
        except WarehouseError as exc:
            raise BadInput(f"--baseline: {exc}") from None


def baseline_of(config: SweepConfig, baseline_run_id: str | None) -> RunId | None:
    """The baseline run: as named, or for ``previous`` the latest earlier nightly run."""
    if baseline_run_id == PREVIOUS:
        baseline_run_id = previous_nightly_run(config.warehouse, config.run_id)
    return None if baseline_run_id is None else validate_run_id(baseline_run_id)


@task(name="compare-runs", cache_policy=NO_CACHE)
def compare_task(config: SweepConfig, baseline: str) -> Comparison:
    return write_comparison(config.warehouse, hygiene.agentsweep_home() / "reports", baseline,
                            config.run_id)


@task(name="decide", cache_policy=NO_CACHE)
def decide_task(config: SweepConfig, baseline: RunId, gate_config: str | None,
                review: str | None) -> PublishedDecision | None:
    """The gate's decision on the run against its baseline, published (record, JSON, JUnit,
    HTML); None when the two runs share nothing to pair (the CSV still lists the cells)."""
    options = DecideOptions(baseline, config.run_id, Path(gate_config) if gate_config else None,
                            Path(review) if review else None, catalogs=tuple(config.catalogs))
    try:
        decision = make_decision(config.warehouse, options)
    except ComparisonInputError:
        return None
    return publish(config.warehouse, decision, hygiene.agentsweep_home() / "reports")


@task(name="html-report", cache_policy=NO_CACHE)
def html_task(config: SweepConfig) -> Path:
    """The run's own report, when there is no decision to report."""
    path = hygiene.agentsweep_home() / "reports" / f"{config.run_id}.html"
    return decision_report(config.warehouse, path, config.run_id, None)


@flow(name="agentsweep-nightly", log_prints=False, validate_parameters=False)
def nightly(spec_path: str, baseline_run_id: str | None = None, run_id: str | None = None,
            gate_config: str | None = None, review: str | None = None,
            prepared: Handed[PreparedSweep] | None = None) -> Any:
    """Sweep the spec; with a baseline run id (or ``previous``), write the comparison and
    decide as ``agentsweep gate`` decides (the default gate unless ``gate_config``). The flow
    run's final state is the verdict: Completed, Failed (blocked, incomplete) with the verdict
    line and reasons, Cancelled (interrupted); its last printed line is the verdict. The
    program hands its preparation (``prepared``); a deployment's run prepares here."""
    check_baseline(baseline_run_id)
    config = nightly_config(spec_path, run_id)
    name_this_flow_run(f"nightly {config.run_id}", tags_of(config, "nightly"))
    sweep = prepared_for(config, () if prepared is None else (prepared,))
    config = sweep.config
    try:
        outcome = run_sweep(sweep, "nightly")
    except KeyboardInterrupt:
        return interrupted_state(f"nightly {config.run_id}: what finished is saved; continue "
                                 f"with agentsweep run --run-id {config.run_id} --resume")
    baseline = baseline_of(config, baseline_run_id)
    comparison = compare_task(config, baseline) if baseline is not None else None
    published = (decide_task(config, baseline, gate_config, review)
                 if baseline is not None else None)
    html = published.html if published is not None else html_task(config)
    result = NightlyOutcome(config.run_id, outcome, comparison, html, published)
    code, lines = verdict_lines(result)
    for line in lines:
        print(line, flush=True)  # the program's terminal, and a served deployment's log
    reasons = published.decision.gate.reasons if published is not None else []
    return verdict_state(code, lines[-1], reasons, result)


def deployment(spec_path: str | Path = DEFAULT_SPEC, baseline_run_id: str | None = PREVIOUS,
               cron: str = CRON, name: str = DEPLOYMENT_NAME,
               gate_config: str | None = None) -> RunnerDeployment:
    """The scheduled deployment of ``nightly`` (the spec path is made absolute)."""
    made = nightly.to_deployment(
        name=name, cron=cron,
        parameters={"spec_path": str(Path(spec_path).resolve()),
                    "baseline_run_id": baseline_run_id,
                    "gate_config": str(Path(gate_config).resolve()) if gate_config else None},
        description="Nightly regression sweep and baseline comparison (agentsweep).",
        tags=["agentsweep", "nightly"])
    if not isinstance(made, RunnerDeployment):  # only from async code, which this is not
        raise TypeError("deployment() must be called from synchronous code")
    return made


def run_once(spec: str, baseline: str | None, run_id: str | None,
             gate: str | None = None, review: str | None = None) -> int:
    """``run``: prepare (a mistake: one line, exit 2, before Prefect starts), run the flow (it
    prints its verdict last); the exit code."""
    from pipeline.execution.runlock import RunLocked
    from pipeline.runtime.prefect_state import mark_good
    from pipeline.runtime.probe import prefect_lost_line
    from pipeline.runtime.startup import start_failure_line

    try:
        check_baseline(baseline)
        config = nightly_config(spec, run_id)
        prepared = prepare(config, say=print)
        check_decision_files(gate, review)
    except (BadInput, CatalogError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    print(f"nightly run {config.run_id}: starting on {prepared.where}", flush=True)
    quiet_flow_logs()
    try:
        state = nightly.with_options(flow_run_name=f"nightly {config.run_id}")(
            spec, baseline, config.run_id, gate, review, Handed.of(config, prepared),
            return_state=True)
        result = cast(NightlyOutcome, outcome_of(cast("State[Any]", state)))
    except KeyboardInterrupt:
        print(f"interrupted (exit {ExitCode.INTERRUPTED}): what finished is saved; continue "
              f"with: agentsweep run --run-id {config.run_id} --resume", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except (RunLocked, CatalogError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    except Exception as exc:
        lost = start_failure_line(exc, "run the same command again") or prefect_lost_line(
            exc, f"nightly {config.run_id}", f"agentsweep run --run-id {config.run_id} --resume")
        if lost is None:
            raise
        print(lost, file=sys.stderr)
        return ExitCode.INCOMPLETE
    mark_good(hygiene.prefect_home())
    return verdict_lines(result)[0]


def verdict_lines(result: NightlyOutcome) -> tuple[ExitCode, list[str]]:
    """What the run wrote, the decision's reasons, and last the verdict line: the gate's
    (``reports.decision.verdict_line``) with a baseline, else PASS / INCOMPLETE on the run's
    own trials; and the exit code."""
    totals = run_totals(result.sweep.summary_columns, result.sweep.summary_rows)
    stopped = result.sweep.stopped
    incomplete = result.sweep.statuses.get("incomplete", 0)
    comparison = result.comparison
    lines = [f"run {result.run_id}: executed {result.sweep.executed}; comparison: "
             f"{comparison.report if comparison else 'none'}; HTML report: {result.html}"]
    decision = result.decision
    resume = f"agentsweep run --run-id {result.run_id} --resume"
    if stopped is not None:
        return ExitCode.INCOMPLETE, [*lines, f"INCOMPLETE: nightly {result.run_id} stopped: "
                                     f"{stopped.reason}. {stopped.remedy}, then resume with "
                                     f"{resume}; trials: {totals.counts()}; exit "
                                     f"{ExitCode.INCOMPLETE}"]
    if decision is not None and result.published is not None:
        code = ExitCode(decision.gate.exit_code)
        lines.append(f"decision record: {result.published.record}; JUnit: "
                     f"{result.published.junit}")
        lines += [f"  - {reason}" for reason in decision.gate.reasons]
        return code, [*lines, verdict_line(decision, f"trials: {totals.counts()}")]
    against = (f"against {comparison.baseline}: nothing to pair (see the comparison)"
               if comparison else "no baseline to compare with")
    code = ExitCode.INCOMPLETE if incomplete else ExitCode.OK
    verdict = "INCOMPLETE" if incomplete else "PASS"
    return code, [*lines, f"{verdict}: nightly {result.run_id} {against}"
                  + (f"; {incomplete} trial(s) incomplete: resume with {resume}"
                     if incomplete else "")
                  + f"; trials: {totals.counts()}; exit {code}"]


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
    parser.add_argument("--gate", help="gate config (YAML); default: the default gate")
    parser.add_argument("--review", help="review file (YAML) for expectation changes (`run`)")
    args = parser.parse_args(argv)
    hygiene.apply()
    baseline = None if args.baseline.lower() == "none" else args.baseline
    if args.command == "run":
        code = run_once(args.spec, baseline, args.run_id, args.gate, args.review)
        exit_within(code)  # its verdict is said: Prefect's exit work may not hold the process
        raise SystemExit(code)
    serve_deployment(deployment(args.spec, baseline, args.cron, args.name, args.gate), args.cron)


if __name__ == "__main__":
    main()
